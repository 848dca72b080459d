// RUN: deplo-opt %s --split-input-file -p loop-split-nests | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-split-nests | deplo-opt --split-input-file | filecheck %s

// cat of two [128, 128] along dim 1: a nest each, 16384 iterations each, a kernel each (each
// gets its own grid); the second launch follows the first, on the same arguments.
// CHECK-LABEL: loop.kernel @cat(%x0: memref<128x128xf32>, %x1: memref<128x128xf32>, %out: memref<128x256xf32>)
// CHECK-NEXT:    loop.for %i = 0 to 128 free {
// CHECK-NEXT:      loop.for %j = 0 to 128 free {
// CHECK-NEXT:        loop.load %x0[%i, %j]
// CHECK-NOT:     %x1
// CHECK-LABEL: loop.kernel @cat_1(%x0: memref<128x128xf32>, %x1: memref<128x128xf32>, %out: memref<128x256xf32>)
// CHECK-NEXT:    loop.for %i = 0 to 128 free {
// CHECK-NEXT:      loop.for %j = 0 to 128 free {
// CHECK-NEXT:        loop.load %x1[%i, %j]
// CHECK:           loop.store %{{.*}}, %out[%i, %j] map (d0, d1) -> (d0, (d1 + 128))
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @cat(%x0, %x1, %cat)
// CHECK-NEXT:    loop.launch @cat_1(%x0, %x1, %cat)

builtin.module {
  loop.kernel @cat(%x0: memref<128x128xf32>, %x1: memref<128x128xf32>, %out: memref<128x256xf32>) {
    loop.for %i = 0 to 128 free {
      loop.for %j = 0 to 128 free {
        %0 = loop.load %x0[%i, %j] : memref<128x128xf32>
        loop.store %0, %out[%i, %j] : memref<128x256xf32>
      }
    }
    loop.for %i = 0 to 128 free {
      loop.for %j = 0 to 128 free {
        %1 = loop.load %x1[%i, %j] : memref<128x128xf32>
        loop.store %1, %out[%i, %j] map (d0, d1) -> (d0, (d1 + 128)) : memref<128x256xf32>
      }
    }
  }
  func.func @main(%x0: memref<128x128xf32>, %x1: memref<128x128xf32>) -> memref<128x256xf32> {
    %cat = memref.alloc() : memref<128x256xf32>
    loop.launch @cat(%x0, %x1, %cat) : memref<128x128xf32>, memref<128x128xf32>, memref<128x256xf32>
    func.return %cat : memref<128x256xf32>
  }
}

// -----

// pad's shape: a border row, the padded middle, a border row. The middle is big (a kernel of
// its own); each border is small and stays where it is, in order: three launches.
// CHECK-LABEL: loop.kernel @pad(
// CHECK:         loop.for %a = 0 to 130 free {
// CHECK-NEXT:      loop.store %{{.*}}, %out[%a]
// CHECK-NOT:     loop.for
// CHECK-LABEL: loop.kernel @pad_2(
// CHECK-LABEL: loop.kernel @pad_1(
// CHECK:         loop.for %i = 0 to 128 free {
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @pad(
// CHECK-NEXT:    loop.launch @pad_1(
// CHECK-NEXT:    loop.launch @pad_2(

builtin.module {
  loop.kernel @pad(%x: memref<128x128xf32>, %out: memref<130x130xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 130 free {
      loop.store %0, %out[%a] map (d0) -> (0, d0) : memref<130x130xf32>
    }
    loop.for %i = 0 to 128 free {
      loop.for %j = 0 to 130 free {
        %1 = loop.load %x[%i, %j] map (d0, d1) -> (d0, ((d1 + 127) mod 128)) : memref<128x128xf32>
        loop.store %1, %out[%i, %j] map (d0, d1) -> ((d0 + 1), d1) : memref<130x130xf32>
      }
    }
    loop.for %b = 0 to 130 free {
      loop.store %0, %out[%b] map (d0) -> (129, d0) : memref<130x130xf32>
    }
  }
  func.func @main(%x: memref<128x128xf32>) -> memref<130x130xf32> {
    %pad = memref.alloc() : memref<130x130xf32>
    loop.launch @pad(%x, %pad) : memref<128x128xf32>, memref<130x130xf32>
    func.return %pad : memref<130x130xf32>
  }
}

// -----

// Left alone: two small nests (one block does them well), and nests beside a load at the top.
// CHECK-LABEL: loop.kernel @small(
// CHECK-NOT:   loop.kernel @small_1

builtin.module {
  loop.kernel @small(%x0: memref<16x16xf32>, %x1: memref<16x16xf32>, %out: memref<32x16xf32>) {
    loop.for %i = 0 to 16 free {
      loop.for %j = 0 to 16 free {
        %0 = loop.load %x0[%i, %j] : memref<16x16xf32>
        loop.store %0, %out[%i, %j] : memref<32x16xf32>
      }
    }
    loop.for %i = 0 to 16 free {
      loop.for %j = 0 to 16 free {
        %1 = loop.load %x1[%i, %j] : memref<16x16xf32>
        loop.store %1, %out[%i, %j] map (d0, d1) -> ((d0 + 16), d1) : memref<32x16xf32>
      }
    }
  }
  func.func @main(%x0: memref<16x16xf32>, %x1: memref<16x16xf32>) -> memref<32x16xf32> {
    %small = memref.alloc() : memref<32x16xf32>
    loop.launch @small(%x0, %x1, %small) : memref<16x16xf32>, memref<16x16xf32>, memref<32x16xf32>
    func.return %small : memref<32x16xf32>
  }
}

// -----

// A pad: every part stores a constant but the middle one. One nest over the output selects
// each element's part by its column; the input is read at the wrapped column (in bounds
// everywhere, used where it is exact). Its inner pad's row compare keeps its row loop.
// CHECK-LABEL: loop.kernel @pad_cols(
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK:         loop.for %[[R:.*]] = 0 to 9 free {
// CHECK-NEXT:      loop.for %[[C:.*]] = 0 to 7 free {
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi ult, %[[R]], %{{.*}} : index
// CHECK-NEXT:        %[[V:.*]] = loop.load %x[%[[R]], %[[C]]] map (d0, d1) -> (((d0 + 6) mod 7), ((d1 + 4) mod 5)) : memref<7x5xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.select %[[IN]], %[[V]], %{{.*}} : f32
// CHECK-NEXT:        %[[HI:.*]] = arith.cmpi ult, %[[C]], %[[C6]] : index
// CHECK-NEXT:        %[[S1:.*]] = arith.select %[[HI]], %[[M]], %{{.*}} : f32
// CHECK-NEXT:        %[[LO:.*]] = arith.cmpi ult, %[[C]], %[[C1]] : index
// CHECK-NEXT:        %[[S0:.*]] = arith.select %[[LO]], %{{.*}}, %[[S1]] : f32
// CHECK-NEXT:        loop.store %[[S0]], %out[%[[R]], %[[C]]] : memref<9x7xf32>
// CHECK-NOT:     loop.for
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    loop.launch @pad_cols(
// CHECK-NEXT:    func.return

builtin.module {
  loop.kernel @pad_cols(%x: memref<7x5xf32>, %out: memref<9x7xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    loop.for %a0 = 0 to 9 free {
      loop.for %a1 = 0 to 1 free {
        loop.store %zero, %out[%a0, %a1] : memref<9x7xf32>
      }
    }
    loop.for %b0 = 0 to 9 free {
      loop.for %b1 = 0 to 5 free {
        %in = arith.cmpi ult, %b0, %c8 : index
        %v = loop.load %x[%b0, %b1] map (d0, d1) -> (((d0 + 6) mod 7), d1) : memref<7x5xf32>
        %m = arith.select %in, %v, %zero : f32
        loop.store %m, %out[%b0, %b1] map (d0, d1) -> (d0, (d1 + 1)) : memref<9x7xf32>
      }
    }
    loop.for %e0 = 0 to 9 free {
      loop.for %e1 = 0 to 1 free {
        loop.store %zero, %out[%e0, %e1] map (d0, d1) -> (d0, (d1 + 6)) : memref<9x7xf32>
      }
    }
  }
  func.func @main(%x: memref<7x5xf32>) -> memref<9x7xf32> {
    %pad = memref.alloc() : memref<9x7xf32>
    loop.launch @pad_cols(%x, %pad) : memref<7x5xf32>, memref<9x7xf32>
    func.return %pad : memref<9x7xf32>
  }
}

// -----

// A constant between the parts' nests moves before the merged nest that uses it.
// CHECK-LABEL: loop.kernel @pad_consts(
// CHECK:         %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         loop.for
// CHECK:           arith.mulf %{{.*}}, %[[TWO]] : f32
builtin.module {
  loop.kernel @pad_consts(%x: memref<3x4xf32>, %out: memref<6x4xf32>) {
    %z = arith.constant 5.000000e-01 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.store %z, %out[%a0, %a1] : memref<6x4xf32>
      }
    }
    %two = arith.constant 2.000000e+00 : f32
    loop.for %b0 = 0 to 3 free {
      loop.for %b1 = 0 to 4 free {
        %v = loop.load %x[%b0, %b1] : memref<3x4xf32>
        %w = arith.mulf %v, %two : f32
        loop.store %w, %out[%b0, %b1] map (d0, d1) -> ((d0 + 1), d1) : memref<6x4xf32>
      }
    }
    loop.for %e0 = 0 to 2 free {
      loop.for %e1 = 0 to 4 free {
        loop.store %z, %out[%e0, %e1] map (d0, d1) -> ((d0 + 4), d1) : memref<6x4xf32>
      }
    }
  }
  func.func @main(%x: memref<3x4xf32>) -> memref<6x4xf32> {
    %pad = memref.alloc() : memref<6x4xf32>
    loop.launch @pad_consts(%x, %pad) : memref<3x4xf32>, memref<6x4xf32>
    func.return %pad : memref<6x4xf32>
  }
}
