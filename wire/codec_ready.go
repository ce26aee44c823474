package wire

import "fmt"

// READY's codec (types.go documents its elements).

var readyFields = []string{
	"protocol_version", "engine_index", "error", "model", "served_model_name", "max_model_len",
	"vocab_size", "block_size", "num_blocks", "eos_token_ids", "engine_id", "pid", "version", "max_logprobs",
	"max_num_seqs", "speculative", "pooling", "max_loras", "classifier_labels",
}

func (r *Ready) encode(e *enc) {
	// The optional tail is written up to its last set element: a READY
	// with none of them is as before pooling (the golden READY stays).
	n := len(readyFields)
	switch {
	case len(r.ClassifierLabels) > 0:
	case r.MaxLoRAs > 0:
		n--
	case r.Pooling != "":
		n -= 2
	default:
		n -= 3
	}
	e.arrayLen(n)
	e.int(int64(r.ProtocolVersion))
	e.int(int64(r.EngineIndex))
	e.optStr(r.Error)
	e.str(r.Model)
	e.str(r.ServedModelName)
	e.int(int64(r.MaxModelLen))
	e.int(int64(r.VocabSize))
	e.int(int64(r.BlockSize))
	e.int(int64(r.NumBlocks))
	e.int32s(r.EOSTokenIDs)
	e.str(r.EngineID)
	e.int(int64(r.PID))
	e.str(r.Version)
	e.int(int64(r.MaxLogprobs))
	e.int(int64(r.MaxNumSeqs))
	if s := r.Speculative; s != nil {
		e.arrayLen(4)
		e.int(int64(s.NMax))
		e.int(int64(s.NMin))
		e.float(s.PMin)
		e.str(s.Type)
	} else {
		e.null()
	}
	if n > 16 {
		e.str(r.Pooling)
	}
	if n > 17 {
		e.int(int64(r.MaxLoRAs))
	}
	if n > 18 {
		e.strs(r.ClassifierLabels)
	}
}

func (r *Ready) decode(d *dec) error {
	*r = Ready{MaxLogprobs: DefaultMaxLogprobs}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("Ready: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			r.ProtocolVersion, err = d.int()
		case 1:
			r.EngineIndex, err = d.int()
		case 2:
			r.Error, err = d.str()
		case 3:
			r.Model, err = d.str()
		case 4:
			r.ServedModelName, err = d.str()
		case 5:
			r.MaxModelLen, err = d.int()
		case 6:
			r.VocabSize, err = d.int()
		case 7:
			r.BlockSize, err = d.int()
		case 8:
			r.NumBlocks, err = d.int()
		case 9:
			r.EOSTokenIDs, err = d.int32s()
		case 10:
			r.EngineID, err = d.str()
		case 11:
			r.PID, err = d.int()
		case 12:
			r.Version, err = d.str()
		case 13:
			r.MaxLogprobs, err = d.int()
		case 14:
			r.MaxNumSeqs, err = d.int()
		case 15:
			r.Speculative, err = decodeSpecInfo(d)
		case 16:
			r.Pooling, err = d.str()
		case 17:
			r.MaxLoRAs, err = d.int()
		case 18:
			r.ClassifierLabels, err = d.strs()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("Ready", readyFields, i, err)
		}
	}
	return nil
}

// decodeSpecInfo reads READY's speculative: [n_max, n_min, p_min, type]
// or nil.
func decodeSpecInfo(d *dec) (*SpecInfo, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return nil, err
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	s := &SpecInfo{}
	for i := range n {
		switch i {
		case 0:
			s.NMax, err = d.int()
		case 1:
			s.NMin, err = d.int()
		case 2:
			s.PMin, err = d.float64()
		case 3:
			s.Type, err = d.str()
		default:
			err = d.skip()
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}
