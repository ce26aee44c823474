package wire

import "fmt"

var specDecodingKeys = []string{"num_spec_tokens", "num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos"}

func (s *SpecDecodingStats) encode(e *enc) {
	k := specDecodingKeys
	e.mapLen(len(k))
	e.str(k[0])
	e.int(int64(s.NumSpecTokens))
	e.str(k[1])
	e.int(s.NumDrafts)
	e.str(k[2])
	e.int(s.NumDraftTokens)
	e.str(k[3])
	e.int(s.NumAcceptedTokens)
	e.str(k[4])
	e.arrayLen(len(s.NumAcceptedTokensPerPos))
	for _, v := range s.NumAcceptedTokensPerPos {
		e.int(v)
	}
}

func (s *SpecDecodingStats) decode(d *dec) error {
	*s = SpecDecodingStats{}
	return d.fieldMap("SpecDecodingStats", func(key string) (known bool, err error) {
		switch key {
		case "num_spec_tokens":
			s.NumSpecTokens, err = d.int()
		case "num_drafts":
			s.NumDrafts, err = d.int64()
		case "num_draft_tokens":
			s.NumDraftTokens, err = d.int64()
		case "num_accepted_tokens":
			s.NumAcceptedTokens, err = d.int64()
		case "num_accepted_tokens_per_pos":
			s.NumAcceptedTokensPerPos, err = list(d, d.int64)
		default:
			return false, nil
		}
		return true, err
	})
}

// specDecodeStep reads an output's spec_decode array (nil stays nil).
func (d *dec) specDecodeStep() (*SpecDecodeStep, error) {
	if isNil, err := d.takeNil(); err != nil || isNil {
		return nil, err
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, fmt.Errorf("spec_decode: %w", err)
	}
	sd := &SpecDecodeStep{}
	for i := range n {
		var err error
		switch i {
		case 0:
			sd.NumSpecTokens, err = d.int()
		case 1:
			sd.NumDraftTokens, err = d.int()
		case 2:
			sd.NumAcceptedTokens, err = d.int()
		default:
			err = d.skip()
		}
		if err != nil {
			return nil, fmt.Errorf("spec_decode[%d]: %w", i, err)
		}
	}
	return sd, nil
}
