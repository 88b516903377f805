def ping(): return 1
