// emu.h: the C entry points of the kernel emulator (emu.cpp).
#ifndef TANDEM_EMU_H
#define TANDEM_EMU_H
#ifdef __cplusplus
extern "C" {
#endif
// tandem_emu_function returns the id (> 0) of the kernel called name, or 0.
int tandem_emu_function(const char* name);
// tandem_emu_launch runs kernel fn over grid × block with num_params
// 8-byte parameter slots; nonzero on bad arguments.
int tandem_emu_launch(int fn, const unsigned* grid, const unsigned* block, unsigned long long* params, int num_params);
// tandem_emu_matmul: y[rows][out] = x[rows][in] · w[out][in]ᵀ, bf16 inputs.
void tandem_emu_matmul(void* y, int y_f32, const unsigned short* x, const unsigned short* w, int rows, int in, int out);
#ifdef __cplusplus
}
#endif
#endif
