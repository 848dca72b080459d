// RUN: deplo-opt %s -p loop-to-tile,tile-plan | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-plan{kind=pointwise}" | filecheck %s --check-prefix=KIND
// RUN: echo '{"format": "deplo-plans/1", "kernels": {"3dd4bdab5b0c974e": {"name": "matmul", "kind": "matmul", "knobs": {"reg_m": 2, "k_chunk": 16}}}}' > %t.json
// RUN: deplo-opt %s -p "loop-to-tile,tile-plan{schedule=\"%t.json\"}" | filecheck %s --check-prefix=PIN
// RUN: echo '{"format": "deplo-plans/1", "kernels": {"0123456789abcdef": {"name": "gone", "kind": "pointwise", "knobs": {}}}}' > %t.stale.json
// RUN: not deplo-opt %s -p "loop-to-tile,tile-plan{schedule=\"%t.stale.json\"}" 2>&1 | filecheck %s --check-prefix=STALE
// RUN: deplo-opt %s -p "loop-to-tile,tile-plan{schedule=\"%t.stale.json\" strict=false}" | filecheck %s
// RUN: echo '{"format": "deplo-plans/1", "kernels": {"e89b901fa63181e1": {"kind": "matmul", "knobs": {}}}}' > %t.kind.json
// RUN: not deplo-opt %s -p "loop-to-tile,tile-plan{schedule=\"%t.kind.json\"}" 2>&1 | filecheck %s --check-prefix=ILLEGAL
// RUN: not deplo-opt %s -p "loop-to-tile,tile-plan{kind=tiling}" 2>&1 | filecheck %s --check-prefix=BADKIND
// RUN: deplo-opt %s -p loop-to-tile,tile-plan | sed 's/ k = 256,/ k = 300,/' | not deplo-opt - -p tile-plan 2>&1 | filecheck %s --check-prefix=FACT
// RUN: deplo-opt %s -p loop-to-tile,tile-plan | sed 's/chain = \[64, 128\]/chain = []/' | not deplo-opt - -p tile-plan 2>&1 | filecheck %s --check-prefix=MALFORMED

// Every kernel gets a class (matmul, row_reduce, pointwise here: what its loops are), the facts
// that class reads off the loops, the heuristic's knobs, and the structural key a plan file names
// it by. Nothing is carried out yet: grid and block stay 1, no step is done.
// CHECK-LABEL: tile.kernel @matmul({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "3dd4bdab5b0c974e"
// CHECK-SAME:      plan matmul(chain = [64, 128], k = 256, tensor_cores = false, splittable = true, slabs = [ik4, kj4])
// CHECK-SAME:      {splits = 2, split_sum = last_block, mma = false, reg_m = 4, reg_n = 4, {{.*}}} {
// CHECK-NEXT:      arith.constant
// CHECK-NEXT:      tile.for %i = 0 to 64 bind(serial) {
// CHECK-LABEL: tile.kernel @row_sum({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "e89b901fa63181e1"
// CHECK-SAME:      plan row_reduce(rows = [8], extent = 1000, contiguous = 4) {grid_dims = 1, threads = 256, vector = 4, {{.*}}} {
// A 1000-wide row in chunks of 256 on blocks: 8 rows alone would fill 8 blocks.
// CHECK-LABEL: tile.kernel @relu({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "b2d69f6c5ea70cf1"
// CHECK-SAME:      plan pointwise(chain = [8, 1000], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 256, {{.*}}} {

// A plan in the IR (printed, then edited) is carried out on the facts it states: they must be
// what the nest says before any step of it; a fact that is no reading of a nest does not verify.
// FACT: deplo-opt: error: kernel @matmul: plan fact k = 300, but its loop nest has 256
// MALFORMED: a matmul plan's facts (chain = [], k = 256, {{.*}}) are not ones the planner reads off a loop nest

// kind=pointwise: every kernel that can take that class (all three: a thread per output).
// KIND: tile.kernel @matmul({{.*}}) key "{{.*}}" plan pointwise(chain = [64, 128], leaf = true)
// KIND: tile.kernel @row_sum({{.*}}) key "{{.*}}" plan pointwise(chain = [8], leaf = true)
// KIND: tile.kernel @relu({{.*}}) key "{{.*}}" plan pointwise(chain = [8, 1000], leaf = true)

// A load between the free loops (a batch norm's per-channel scale after a conv, hoisted above
// the column loop by loop-simplify) keeps the nest a matmul's: the tile passes sink it into the
// cell. A buffer the kernel also stores would not be the same values there: no matmul.
// CHECK-LABEL: tile.kernel @scaled_rows(
// CHECK-SAME:      plan matmul(chain = [64, 128], k = 256,
// CHECK-LABEL: tile.kernel @rows_read_back(
// CHECK-NOT:       plan matmul
// CHECK-SAME:      plan

// A plan file pins two knobs of @matmul; the heuristic fills the rest around them (the threads
// are re-planned for the 2-row register tile) and plans the kernels the file does not name.
// PIN-LABEL: tile.kernel @matmul(
// PIN-SAME:      {splits = 2, split_sum = last_block, mma = false, reg_m = 2, reg_n = 4, interleave = false, transpose = true, threads_m = 16, threads_n = 16, k_chunk = 16,
// PIN-LABEL: tile.kernel @row_sum(
// PIN-SAME:      plan row_reduce(

// STALE: error: {{.*}}.stale.json: kernel 0123456789abcdef (gone) matches no kernel of this program
// ILLEGAL: error: {{.*}}.kind.json: kernel @row_sum: kind: the kernel cannot take a matmul plan (it can take: row_reduce, pointwise)
// BADKIND: error: tile-plan: option kind=tiling: expected one of matmul, row_reduce, attention, pointwise

builtin.module {
  loop.kernel @matmul(%x: memref<64x256xf32>, %w: memref<256x128xf32>, %out: memref<64x128xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 64 free {
      loop.for %j = 0 to 128 free {
        %s = loop.for %k = 0 to 256 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%i, %k] : memref<64x256xf32>
          %b = loop.load %w[%k, %j] : memref<256x128xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x128xf32>
      }
    }
  }
  loop.kernel @row_sum(%x: memref<8x1000xf32>, %out: memref<8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 8 free {
      %s = loop.for %k = 0 to 1000 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%i, %k] : memref<8x1000xf32>
        %n = arith.addf %acc, %v : f32
        loop.yield %n : f32
      }
      loop.store %s, %out[%i] : memref<8xf32>
    }
  }
  loop.kernel @relu(%x: memref<8x1000xf32>, %out: memref<8x1000xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 8 free {
      loop.for %j = 0 to 1000 free {
        %v = loop.load %x[%i, %j] : memref<8x1000xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %out[%i, %j] : memref<8x1000xf32>
      }
    }
  }
  loop.kernel @scaled_rows(%x: memref<64x256xf32>, %w: memref<256x128xf32>, %scale: memref<64xf32>, %out: memref<64x128xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 64 free {
      %c = loop.load %scale[%i] : memref<64xf32>
      loop.for %j = 0 to 128 free {
        %s = loop.for %k = 0 to 256 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%i, %k] : memref<64x256xf32>
          %b = loop.load %w[%k, %j] : memref<256x128xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %r = arith.mulf %s, %c : f32
        loop.store %r, %out[%i, %j] : memref<64x128xf32>
      }
    }
  }
  loop.kernel @rows_read_back(%x: memref<64x256xf32>, %w: memref<256x128xf32>, %out: memref<64x128xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 64 free {
      %c = loop.load %out[%i, %i] : memref<64x128xf32>
      loop.for %j = 0 to 128 free {
        %s = loop.for %k = 0 to 256 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%i, %k] : memref<64x256xf32>
          %b = loop.load %w[%k, %j] : memref<256x128xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %r = arith.mulf %s, %c : f32
        loop.store %r, %out[%i, %j] : memref<64x128xf32>
      }
    }
  }
}
