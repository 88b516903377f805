def ping(): return 2
