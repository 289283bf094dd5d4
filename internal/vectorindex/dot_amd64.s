//go:build amd64 && !purego

#include "textflag.h"

// func dotInt8AVX2(a, b []int8) int32
//
// 32 elements a round: each half of 16 int8 is sign-extended to 16 int16
// (VPMOVSXBW), multiplied pairwise and summed in pairs into 8 int32 (VPMADDWD: a
// product is at most 127*127, a pair's sum fits), and added to one of two
// accumulators. The 16 int32 lanes are summed at the end.
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	SHRQ $5, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	TESTQ CX, CX
	JZ done

loop:
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD Y2, Y3, Y2
	VPADDD Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD Y4, Y5, Y4
	VPADDD Y4, Y1, Y1
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop

done:
	VPADDD Y0, Y1, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X0, X1, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X0, X1, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X0, X1, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+48(FP)
	RET
