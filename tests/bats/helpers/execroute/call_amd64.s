#include "textflag.h"

// func call(fn uintptr) uint64
TEXT ·call(SB), NOSPLIT, $0-16
	MOVQ fn+0(FP), AX
	CALL AX
	MOVQ AX, ret+8(FP)
	RET
