// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-tensor-core | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-tensor-core{warps-m=1 warps-n=2 frags-m=1 frags-n=2}" | filecheck %s --check-prefix=SMALL

// fp16 64 x 96 x 80: 2 x 2 warps of 2 x 4 fragments (64 x 64 per block: 1 x 2 blocks), lanes
// on thread.x. K in steps of 16: per step each warp loads 2 A and 4 B fragments and issues 8
// mma; then each lane stores its 32 accumulator elements at rows row0 + l / 4 (+ 8 / + 16) and
// columns col0 + 2 (l % 4) (+ 1 / + 8 ...); the 80 columns pass the second block's 64: guarded.
// CHECK-LABEL: tile.kernel @matmul({{.*}}) grid(2, 1, 1) block(32, 4, 1) schedule ["tile-tensor-core{warps-m=2 warps-n=2 frags-m=2 frags-n=4}"] {
// CHECK:         tile.for %a0 = 0 to 1 bind(block.y) {
// CHECK-NEXT:      tile.for %a1 = 0 to 2 bind(block.x) {
// CHECK-NEXT:        tile.for %w = 0 to 4 bind(thread.y) {
// CHECK-NEXT:          tile.for %l = 0 to 32 bind(thread.x) {
// CHECK:                 %row0 = arith.addi
// CHECK:                 %col0 = arith.addi
// CHECK-NEXT:            %c, {{.*}} = tile.for %r0 = 0 to 96 step 16 bind(serial) iter(%acc = %zero, {{.*}}) -> (f32, {{.*}}) {
// CHECK-NEXT:              %{{.*}} = tile.fragment_load a %x0[%row0, %r0] lane(%l) : memref<64x96xf16> -> i32, i32, i32, i32
// CHECK-COUNT-1:           tile.fragment_load a
// CHECK-COUNT-4:           tile.fragment_load b_kn %x1[%r0,
// CHECK-COUNT-8:           tile.mma f16
// CHECK:                 %g = arith.divsi %l, %c4 : index
// CHECK:                 %rg = arith.addi %row0, %g : index
// CHECK-NEXT:            %cg = arith.addi %col0, %t2 : index
// CHECK:                 %t = arith.truncf %c : f32 to f16
// CHECK:                 scf.if %in {
// CHECK-NEXT:              loop.store %t, %out[%rg, %{{.*}}] : memref<64x80xf16>
// SMALL-LABEL: tile.kernel @matmul({{.*}}) grid(3, 4, 1) block(32, 2, 1) schedule ["tile-tensor-core{warps-m=1 warps-n=2 frags-m=1 frags-n=2}"] {
// SMALL:             tile.for %r0 = 0 to 96 step 16
// SMALL-COUNT-1:       tile.fragment_load a
// SMALL-COUNT-2:       tile.fragment_load b_kn
// SMALL-COUNT-2:       tile.mma f16

builtin.module {
  loop.kernel @matmul(%x0: memref<64x96xf16>, %x1: memref<96x80xf16>, %out: memref<64x80xf16>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 80 free {
        %s = loop.for %r0 = 0 to 96 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x96xf16>
          %ae = arith.extf %a : f16 to f32
          %b = loop.load %x1[%r0, %a1] : memref<96x80xf16>
          %be = arith.extf %b : f16 to f32
          %p = arith.mulf %ae, %be : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %t = arith.truncf %s : f32 to f16
        loop.store %t, %out[%a0, %a1] : memref<64x80xf16>
      }
    }
  }
}

// -----

// A bf16 linear layer (the weight is [N][K]: b_nk fragments) with a bias: the epilogue runs
// once per accumulator element; K = 53 is walked to 64, the fragments read zero past it.
// CHECK-LABEL: tile.kernel @linear({{.*}}) schedule ["tile-tensor-core{{.*}}"] {
// CHECK:             tile.for %r0 = 0 to 64 step 16 bind(serial)
// CHECK:               tile.fragment_load b_nk %x1[%{{.*}}, %r0] lane(%l) : memref<40x53xbf16>
// CHECK:               tile.mma bf16
// CHECK:             loop.load %x2[
// SMALL-LABEL: tile.kernel @linear
// SMALL:               tile.mma bf16

builtin.module {
  loop.kernel @linear(%x0: memref<37x53xbf16>, %x1: memref<40x53xbf16>, %x2: memref<40xbf16>, %out: memref<37x40xbf16>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 37 free {
      loop.for %a1 = 0 to 40 free {
        %s = loop.for %r0 = 0 to 53 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<37x53xbf16>
          %ae = arith.extf %a : bf16 to f32
          %b = loop.load %x1[%a1, %r0] : memref<40x53xbf16>
          %be = arith.extf %b : bf16 to f32
          %p = arith.mulf %ae, %be : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %bv = loop.load %x2[%a1] : memref<40xbf16>
        %be2 = arith.extf %bv : bf16 to f32
        %y = arith.addf %s, %be2 : f32
        %t = arith.truncf %y : f32 to bf16
        loop.store %t, %out[%a0, %a1] : memref<37x40xbf16>
      }
    }
  }
}

// -----

// fp32 (the SIMT schedule's), and an fp16 product that is not a plain A * B (a scale inside the
// reduction): left alone.
// CHECK-LABEL: tile.kernel @negative_fp32({{.*}}) schedule [] {
// CHECK-LABEL: tile.kernel @negative_scaled({{.*}}) schedule [] {
// SMALL-LABEL: tile.kernel @negative_fp32({{.*}}) schedule [] {
// SMALL-LABEL: tile.kernel @negative_scaled({{.*}}) schedule [] {

builtin.module {
  loop.kernel @negative_fp32(%x0: memref<64x64xf32>, %x1: memref<64x64xf32>, %out: memref<64x64xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 64 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x64xf32>
          %b = loop.load %x1[%r0, %a1] : memref<64x64xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  loop.kernel @negative_scaled(%x0: memref<64x64xf16>, %x1: memref<64x64xf16>, %out: memref<64x64xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %two = arith.constant 2.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 64 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x64xf16>
          %ae = arith.extf %a : f16 to f32
          %b = loop.load %x1[%r0, %a1] : memref<64x64xf16>
          %be = arith.extf %b : f16 to f32
          %p = arith.mulf %ae, %be : f32
          %q = arith.mulf %p, %two : f32
          %n = arith.addf %acc, %q : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
}
