"""Analyses shared by the passes and the lowerings, one layer below both: what an index is
(`index`) and what shape a tile kernel's loop nest has (`nest`). They read IR and never change
it; rewrites live with the passes that make them."""
