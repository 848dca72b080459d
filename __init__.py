"""deplo: a hackable ML compiler in Python on xDSL (torch -> tir -> loop -> tile -> kernel -> cuda)."""
