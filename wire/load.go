package wire

import (
	"encoding/binary"
	"fmt"
)

// PUB socket topics (first frame of every PUB message).
const (
	TopicLoad = "load" // payload: LoadReport, about every 100 ms
	TopicKV   = "kv"   // payload: vLLM-format KV events [ts, [events], dp_rank] (lands with the routing work)
)

// LoadReport is what an engine publishes under TopicLoad on its PUB
// socket. Array:
//
//	0 engine_index     int
//	1 timestamp        float64 (unix seconds)
//	2 num_waiting      int (requests)
//	3 num_running      int (requests)
//	4 num_free_blocks  int (KV blocks)
//	5 num_total_blocks int (KV blocks)
//	6 kv_cache_usage   float64 (0..1)
type LoadReport struct {
	EngineIndex    int
	Timestamp      float64
	NumWaiting     int
	NumRunning     int
	NumFreeBlocks  int
	NumTotalBlocks int
	KVCacheUsage   float64
}

var loadReportFields = []string{
	"engine_index", "timestamp", "num_waiting", "num_running", "num_free_blocks",
	"num_total_blocks", "kv_cache_usage",
}

func (l *LoadReport) encode(e *enc) {
	e.arrayLen(len(loadReportFields))
	e.int(int64(l.EngineIndex))
	e.float(l.Timestamp)
	e.int(int64(l.NumWaiting))
	e.int(int64(l.NumRunning))
	e.int(int64(l.NumFreeBlocks))
	e.int(int64(l.NumTotalBlocks))
	e.float(l.KVCacheUsage)
}

func (l *LoadReport) decode(d *dec) error {
	*l = LoadReport{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("LoadReport: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			l.EngineIndex, err = d.int()
		case 1:
			l.Timestamp, err = d.float64()
		case 2:
			l.NumWaiting, err = d.int()
		case 3:
			l.NumRunning, err = d.int()
		case 4:
			l.NumFreeBlocks, err = d.int()
		case 5:
			l.NumTotalBlocks, err = d.int()
		case 6:
			l.KVCacheUsage, err = d.float64()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("LoadReport", loadReportFields, i, err)
		}
	}
	return nil
}

// PubFrames returns the three frames of one PUB message: [topic, 8-byte
// big-endian seq, payload]. payload is already-encoded msgpack (see Marshal).
func PubFrames(topic string, seq uint64, payload []byte) [][]byte {
	return [][]byte{[]byte(topic), binary.BigEndian.AppendUint64(nil, seq), payload}
}

// ParsePub splits the frames of one PUB message. The payload aliases
// frames[2].
func ParsePub(frames [][]byte) (topic string, seq uint64, payload []byte, err error) {
	if len(frames) != 3 {
		return "", 0, nil, fmt.Errorf("%w: PUB message has %d frames, want 3", ErrMalformed, len(frames))
	}
	if len(frames[1]) != 8 {
		return "", 0, nil, fmt.Errorf("%w: PUB sequence frame is %d bytes, want 8", ErrMalformed, len(frames[1]))
	}
	return string(frames[0]), binary.BigEndian.Uint64(frames[1]), frames[2], nil
}
