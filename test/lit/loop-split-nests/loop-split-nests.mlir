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
