#include "textflag.h"

// func mulAVX2(dst, x, y []float64)
// dst[i] = x[i]·y[i] for i < len(dst) (x and y at least as long), 16, then 4, then 1 at a time.
TEXT ·mulAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-16, BX
	JZ   tail4

loop16:
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VMOVUPD 64(SI)(AX*8), Y2
	VMOVUPD 96(SI)(AX*8), Y3
	VMULPD  (DX)(AX*8), Y0, Y0
	VMULPD  32(DX)(AX*8), Y1, Y1
	VMULPD  64(DX)(AX*8), Y2, Y2
	VMULPD  96(DX)(AX*8), Y3, Y3
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	VMOVUPD Y2, 64(DI)(AX*8)
	VMOVUPD Y3, 96(DI)(AX*8)
	ADDQ    $16, AX
	CMPQ    AX, BX
	JLT     loop16

tail4:
	MOVQ CX, BX
	ANDQ $-4, BX
	CMPQ AX, BX
	JGE  tail1

loop4:
	VMOVUPD (SI)(AX*8), Y0
	VMULPD  (DX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     loop4

tail1:
	CMPQ AX, CX
	JGE  done

loop1:
	VMOVSD (SI)(AX*8), X0
	VMULSD (DX)(AX*8), X0, X0
	VMOVSD X0, (DI)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    loop1

done:
	VZEROUPPER
	RET
