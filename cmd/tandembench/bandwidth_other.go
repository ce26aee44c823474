//go:build !(goexperiment.simd && amd64)

package main

var readKernel, readSum = "go", readSumGo
