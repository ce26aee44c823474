package detok

// seqStatus classifies the UTF-8 sequence at the start of a byte slice.
type seqStatus int

const (
	seqValid      seqStatus = iota // a complete, valid sequence
	seqInvalid                     // a maximal invalid subpart: one U+FFFD
	seqIncomplete                  // a valid prefix that more bytes may complete
)

// scanSeq returns the status of the UTF-8 sequence at the start of b (len(b)
// > 0) and its length in bytes: the sequence length when valid, the length of
// the maximal invalid subpart when invalid, and len(b) when incomplete. The
// ranges follow Unicode Table 3-7 (well-formed UTF-8 byte sequences).
func scanSeq(b []byte) (n int, st seqStatus) {
	b0 := b[0]
	var need int                     // continuation bytes after b0
	lo, hi := byte(0x80), byte(0xBF) // range of the first continuation byte
	switch {
	case b0 < 0x80:
		return 1, seqValid
	case b0 >= 0xC2 && b0 <= 0xDF:
		need = 1
	case b0 == 0xE0:
		need, lo = 2, 0xA0
	case b0 == 0xED:
		need, hi = 2, 0x9F
	case b0 >= 0xE1 && b0 <= 0xEF:
		need = 2
	case b0 == 0xF0:
		need, lo = 3, 0x90
	case b0 >= 0xF1 && b0 <= 0xF3:
		need = 3
	case b0 == 0xF4:
		need, hi = 3, 0x8F
	default: // 0x80..0xC1, 0xF5..0xFF never start a sequence
		return 1, seqInvalid
	}
	for i := 1; i <= need; i++ {
		if i >= len(b) {
			return len(b), seqIncomplete
		}
		if c := b[i]; c < lo || c > hi {
			return i, seqInvalid
		}
		lo, hi = 0x80, 0xBF
	}
	return need + 1, seqValid
}
