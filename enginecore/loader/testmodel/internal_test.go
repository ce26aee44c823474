package testmodel

import (
	"math"
	"testing"
)

func TestToF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds up to Inf
		{float32(math.Inf(1)), 0x7c00},
		{5.9604645e-8, 0x0001}, // smallest subnormal
		{2.9802322e-8, 0x0000}, // half of it: a tie, to even (0)
		{6.1035156e-5, 0x0400}, // smallest normal
		{1 + 1.0/2048, 0x3c00}, // tie, to even
		{1 + 3.0/2048, 0x3c02}, // tie, to even (up)
		{0.1, 0x2e66},
	}
	for _, tt := range tests {
		if got := toF16(tt.in); got != tt.want {
			t.Errorf("toF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := toF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("toF16(NaN) = %#04x", got)
	}
}

func TestToBF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, to even
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, to even (up)
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(-1)), 0xff80},
	}
	for _, tt := range tests {
		if got := toBF16(tt.in); got != tt.want {
			t.Errorf("toBF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := toBF16(float32(math.NaN())); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("toBF16(NaN) = %#04x", got)
	}
}
