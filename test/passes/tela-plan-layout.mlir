// layout=PATH writes every planned buffer: id, op location, lifetime, size, alignment,
// offset; CSV in the project's format plus 'location' (tela-alloc reads it back, every
// buffer pinned), or JSON. Several functions: one CSV per function, each named by a remark.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tela-opt %s -p 'tela-plan{capacity=4096 layout=%t/l.csv}' > /dev/null 2> %t/remarks
// RUN: filecheck %s --check-prefix=CSV < %t/l.f.csv
// RUN: filecheck %s --check-prefix=G < %t/l.g.csv
// RUN: filecheck %s --check-prefix=REMARKS < %t/remarks
// CSV: id,lower,upper,size,alignment,offset,location
// CSV-NEXT: a,0,3,1024,4,0,{{.*}}tela-plan-layout.mlir:[[# @LINE + 17]]:3
// CSV-NEXT: b,1,3,512,4,1024,{{.*}}tela-plan-layout.mlir:[[# @LINE + 17]]:3
// G: id,lower,upper,size,alignment,offset,location
// G-NEXT: c,0,2,64,1,0,{{.*}}tela-plan-layout.mlir:[[# @LINE + 29]]:3
// REMARKS: remark: wrote the layout of '@f' to '{{.*}}l.f.csv'
// REMARKS: remark: wrote the layout of '@g' to '{{.*}}l.g.csv'
// RUN: tela-opt %s -p 'tela-plan{capacity=4096 layout=%t/l.json}' > /dev/null
// RUN: filecheck %s --check-prefix=JSON < %t/l.json
// JSON:      "functions": [
// JSON:          "buffers": [
// JSON:              "alignment": 4,
// JSON-NEXT:         "id": "a",
// JSON-NEXT:         "location": "{{.*}}tela-plan-layout.mlir:[[# @LINE + 5]]:3",
// JSON-NEXT:         "lower": 0,
// JSON-NEXT:         "offset": 0,
// JSON-NEXT:         "op": "memref.alloc",
func.func @f() {
  %a = memref.alloc() : memref<256xf32>
  %b = memref.alloc() : memref<128xf32>
  "test.op"(%a, %b) : (memref<256xf32>, memref<128xf32>) -> ()
  func.return
}
// JSON:          "capacity": 4096,
// JSON-NEXT:     "lifetimes": "first-write",
// JSON-NEXT:     "load": 1536,
// JSON-NEXT:     "name": "f",
// JSON-NEXT:     "peak": 1536
// JSON:          "name": "g",

// RUN: not tela-opt %s -p 'tela-plan{layout=%t/x.txt}' 2>&1 | filecheck %s --check-prefix=FORMAT
// FORMAT: invalid layout '{{.*}}x.txt'; expected a '.csv' or '.json' file path, e.g. 'layout=plan.csv'
func.func @g() {
  %c = memref.alloc() : memref<64xi8>
  "test.op"(%c) : (memref<64xi8>) -> ()
  func.return
}
