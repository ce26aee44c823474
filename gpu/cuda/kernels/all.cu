// all.cu: the one translation unit `make kernels` compiles; it includes
// every kernel file so one PTX module (and one fatbin) holds them all.
#include "dequant.cu"
#include "norm.cu"
#include "rope.cu"
#include "act.cu"
#include "cache.cu"
#include "attention.cu"
