// Package nvml discovers NVIDIA GPUs through NVML (go-nvml), without
// creating a CUDA context: index, UUID, name, memory and compute
// capability of every device this process may use.
//
// CUDA_VISIBLE_DEVICES is applied the way the CUDA driver applies it, so
// Device.Index is the ordinal that `--device cuda:N` and cuDeviceGet use
// in this process, while Device.NVMLIndex is NVML's (PCI bus) index. NVML
// itself ignores the variable; see ParseVisible.
//
// The NVML library (libnvidia-ml.so.1) is loaded at run time, so the
// binary starts on machines without a driver: Devices then returns an
// error wrapping ErrUnavailable. go-nvml needs cgo; builds without cgo,
// or for other systems, get a stub that always reports ErrUnavailable.
//
// It imports nothing from this repository; cgo only through go-nvml.
//
// Usage:
//
//	devs, err := nvml.Devices()
//	if errors.Is(err, nvml.ErrUnavailable) {
//		// CPU only
//	}
//	for _, d := range devs {
//		fmt.Printf("cuda:%d %s %d MiB\n", d.Index, d.Name, d.MemoryTotal>>20)
//	}
package nvml
