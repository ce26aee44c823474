// The AVX2 pieces the 4-bit kernels of avx2_amd64.s and the super form's
// row kernel (super_amd64.s) share: constants and the unpacking and
// multiplying of a 32-byte chunk half (16 rows' nibbles, Y15 = 0x0f).

DATA nibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibmask<>(SB), RODATA|NOPTR, $32

DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

// NUNPACK loads the chunk half at off(SI) into Y8 and splits it into its
// low (Y9) and high (Y10) nibbles.
#define NUNPACK(off) \
	VMOVDQU off(SI), Y8 \
	VPAND Y15, Y8, Y9 \
	VPSRLW $4, Y8, Y10 \
	VPAND Y15, Y10, Y10

// NTOKEN adds one token's products for the chunk half in Y9 (low
// nibbles) and Y10 (high) into the int16 sums s; x bytes at lo/hi(xr).
#define NTOKEN(xr, s, lo, hi) \
	VPBROADCASTD lo(xr), Y11 \
	VPMADDUBSW Y11, Y9, Y12 \
	VPADDW Y12, s, s \
	VPBROADCASTD hi(xr), Y11 \
	VPMADDUBSW Y11, Y10, Y12 \
	VPADDW Y12, s, s
