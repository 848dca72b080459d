"""Analyses shared by the passes and the lowerings, one layer below both: what an index is
(`index`), what shape a tile kernel's loop nest has (`nest`) and how fast a Kernel IR kernel
runs on an sm_90 GPU (`cost_model`: the tuner ranks plans and kernel-horizontal-fuse decides
with it). They read IR and never change
it; rewrites live with the passes that make them."""
