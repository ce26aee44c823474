//go:build goexperiment.simd

#include "textflag.h"

// func minsGroupAVX2(acc *[GroupRows]float32, mins *float32, xs *float32, n int)
//
// acc[r] = Σ_k mins[k][r]·xs[k] over n (even) k, as minsGroup: even k
// into Y0/Y1 (rows 0–7, 8–15), odd k into Y2/Y3, each an FMA chain in k
// order, then the two chains summed. archsimd spills these registers.
TEXT ·minsGroupAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ mins+8(FP), SI
	MOVQ xs+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop:
	CMPQ CX, $2
	JLT  done
	VBROADCASTSS (DX), Y4
	VBROADCASTSS 4(DX), Y5
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y4, Y1
	VFMADD231PS 64(SI), Y5, Y2
	VFMADD231PS 96(SI), Y5, Y3
	ADDQ $8, DX
	ADDQ $128, SI
	SUBQ $2, CX
	JMP  loop

done:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET
