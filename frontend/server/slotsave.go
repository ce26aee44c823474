package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/slotfile"
	"github.com/tandem-llm/tandem/wire"
)

// llama-server's slot actions (--slot-save-path): POST
// /slots/{id}?action=save|restore|erase. A slot is one of the sequences
// an engine runs at once, numbered across the engines as GET /slots
// lists them. A native completion that names id_slot runs on that slot's
// engine, and the slot remembers its tokens (the prompt and what was
// generated, all the KV holds). Save writes them and the KV blocks the
// engine's prefix cache holds for them (kv_export) to a file in the
// save path; restore reads a file back into the slot's engine's prefix
// cache (kv_import), so the next request on that prefix computes only
// the rest — or, when the blocks cannot be copied (another device,
// another model, a llama-server file), recomputes them from the tokens;
// erase evicts the slot's blocks (kv_evict). See frontend/slotfile for
// the file and docs/api.md.

// kvMover is what slot actions need of the engines (engineclient.Client).
type kvMover interface {
	KVExport(ctx context.Context, i int, tokens []int32, salt string, first, limit int) (engineclient.KVResult, error)
	KVImport(ctx context.Context, i int, tokens []int32, salt, session string, first int, layout map[string]any, data []byte) (engineclient.KVResult, error)
	KVEvict(ctx context.Context, i int, tokens []int32, salt string) (engineclient.KVResult, error)
}

// kvChunkBytes bounds the KV bytes of one kv_export or kv_import call,
// under the engines' 32 MiB message limit.
const kvChunkBytes = 16 << 20

// slotRecord is what a slot holds: its engine, and the tokens in its KV
// under its cache salt.
type slotRecord struct {
	engine int // engineclient.EngineState.Index
	tokens []int32
	salt   string
}

// slotTable is every slot's record.
type slotTable struct {
	mu sync.Mutex
	m  map[int]slotRecord
}

func (t *slotTable) get(id int) slotRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *slotTable) set(id int, r slotRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int]slotRecord{}
	}
	t.m[id] = r
}

// slotEngine returns the ready engine slot id is on (GET /slots'
// numbering).
func (s *Server) slotEngine(id int) (engineclient.EngineState, bool) {
	for _, e := range s.eng.Engines() {
		if !e.Ready {
			continue
		}
		if id < e.Info.MaxNumSeqs {
			return e, id >= 0
		}
		id -= e.Info.MaxNumSeqs
	}
	return engineclient.EngineState{}, false
}

// slotPin is a native completion's slot: its engine and cache salt.
type slotPin struct {
	id, engine int
	salt       string
}

// pinSlot resolves id_slot: the request runs on the slot's engine.
func (s *Server) pinSlot(id int, salt string, rank **int) (*slotPin, *openai.Error) {
	if id < 0 {
		return nil, nil
	}
	e, ok := s.slotEngine(id)
	if !ok {
		return nil, openai.BadRequest("id_slot", "Invalid slot ID: %d (GET /slots lists the slots)", id)
	}
	if *rank == nil {
		r := e.Info.EngineIndex
		*rank = &r
	}
	return &slotPin{id: id, engine: e.Index, salt: salt}, nil
}

// recordSlot remembers what a finished request left in its slot's KV:
// its prompt and generated tokens but the last (never fed back).
func (s *Server) recordSlot(p *slotPin, prompt, generated []int32) {
	if p == nil {
		return
	}
	tokens := append([]int32(nil), prompt...)
	if len(generated) > 0 {
		tokens = append(tokens, generated[:len(generated)-1]...)
	}
	s.slotTab.set(p.id, slotRecord{engine: p.engine, tokens: tokens, salt: p.salt})
}

// slotAction serves POST /slots/{id}?action=save|restore|erase.
func (s *Server) slotAction(c echo.Context) error {
	if s.cfg.SlotSavePath == "" {
		e := openai.BadRequest("", "This server does not support slots action. Start it with `--slot-save-path`")
		e.Status, e.Type = http.StatusNotImplemented, "not_supported_error"
		return writeError(c, e)
	}
	id, err := strconv.Atoi(c.Param("id_slot"))
	if err != nil {
		return writeError(c, openai.BadRequest("id_slot", "Invalid slot ID"))
	}
	e, ok := s.slotEngine(id)
	if !ok {
		return writeError(c, openai.BadRequest("id_slot", "Invalid slot ID"))
	}
	action := c.QueryParam("action")
	if action != "save" && action != "restore" && action != "erase" {
		return writeError(c, openai.BadRequest("action", "Invalid action"))
	}
	var body struct {
		Filename  string `json:"filename"`
		CacheSalt string `json:"cache_salt"` // Tandem's, restore: the salt the restored prefix is cached under
	}
	if action != "erase" {
		if oe := readBody(c, &body); oe != nil {
			return writeError(c, oe)
		}
		if !slotfile.ValidFilename(body.Filename) {
			return writeError(c, openai.BadRequest("filename", "Invalid filename"))
		}
	}
	mover, ok := s.eng.(kvMover)
	if !ok {
		return writeError(c, &openai.Error{Status: http.StatusNotImplemented, Type: "not_supported_error", Message: "these engines cannot move KV blocks"})
	}
	if action == "erase" {
		return s.slotErase(c, mover, id)
	}
	path := filepath.Join(s.cfg.SlotSavePath, body.Filename)
	if action == "save" {
		return s.slotSave(c, mover, id, path, body.Filename)
	}
	return s.slotRestore(c, mover, id, e, path, body.Filename, scopeSalt(tenantOf(c), body.CacheSalt))
}

// slotSave writes slot id's tokens and cached KV blocks to path,
// streaming the blocks from the engine a chunk at a time.
func (s *Server) slotSave(c echo.Context, mover kvMover, id int, path, name string) error {
	ctx, start := c.Request().Context(), time.Now()
	rec := s.slotTab.get(id)
	var kv *slotfile.KV
	var chain *chainReader
	if len(rec.tokens) > 0 {
		var err error
		if kv, chain, err = s.exportChain(ctx, mover, rec); err != nil {
			return writeError(c, engineError(err))
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".slot-*")
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err != nil {
		return writeError(c, openai.Internal("Unable to save slot: %v", err))
	}
	defer os.Remove(tmp.Name())
	var data io.Reader
	if chain != nil {
		data = chain
	}
	n, err := slotfile.Write(tmp, rec.tokens, kv, data)
	if err == nil {
		err = tmp.Close()
	} else {
		_ = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		if chain != nil && chain.err != nil { // the engine's failure, not the disk's
			return writeError(c, engineError(chain.err))
		}
		return writeError(c, openai.Internal("Unable to save slot: %v", err))
	}
	blocks := 0
	if kv != nil {
		blocks = kv.NumBlocks
	}
	s.log.Info("slot saved", "slot", id, "file", name, "tokens", len(rec.tokens), "kv_blocks", blocks, "bytes", n)
	return c.JSON(http.StatusOK, map[string]any{"id_slot": id, "filename": name, "n_saved": len(rec.tokens), "n_written": n,
		"n_kv_blocks": blocks, "timings": map[string]float64{"save_ms": ms(time.Since(start))}})
}

// exportChain asks rec's engine for the first chunk of its cached blocks:
// the layout, and a reader of every block, fetched a chunk at a time as
// it is read. kv is nil when the engine keeps none it can copy (the file
// then holds the tokens only).
func (s *Server) exportChain(ctx context.Context, mover kvMover, rec slotRecord) (*slotfile.KV, *chainReader, error) {
	r, err := mover.KVExport(ctx, rec.engine, rec.tokens, rec.salt, 0, 1)
	if err != nil {
		return nil, nil, err
	}
	if r.Code != wire.KVTransferOK {
		s.log.Info("slot save: the engine gives no KV blocks, the file holds the tokens only", "code", r.Code, "reason", r.Message)
		return nil, nil, nil
	}
	kv := &slotfile.KV{Layout: r.Layout, CacheSalt: rec.salt}
	per := kv.BytesPerBlock()
	if per <= 0 || len(r.Data)%per != 0 {
		return nil, nil, fmt.Errorf("kv_export: %d bytes of blocks of %d", len(r.Data), per)
	}
	ch := &chainReader{ctx: ctx, mover: mover, rec: rec, per: per, limit: max(1, kvChunkBytes/per), buf: r.Data,
		next: len(r.Data) / per, total: r.NumBlocks}
	return kv, ch, nil
}

// chainReader reads a slot's cached blocks from its engine, kv_export by
// kv_export, ending where the chain ends (or where it got shorter since:
// blocks evicted meanwhile are not saved). One chunk is held at a time.
type chainReader struct {
	ctx   context.Context
	mover kvMover
	rec   slotRecord
	per   int // bytes per block
	limit int // blocks per kv_export
	buf   []byte
	next  int   // the chain's next block to ask for
	total int   // the chain's length, by the latest answer
	err   error // the export's failure, once it failed
}

func (c *chainReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if c.next >= c.total {
			return 0, io.EOF
		}
		r, err := c.mover.KVExport(c.ctx, c.rec.engine, c.rec.tokens, c.rec.salt, c.next, c.limit)
		switch {
		case err != nil:
			c.err = err
		case r.Code != wire.KVTransferOK || len(r.Data)%c.per != 0:
			c.err = fmt.Errorf("kv_export: %s: %s", r.Code, r.Message)
		case len(r.Data) == 0: // the chain got shorter
			return 0, io.EOF
		default:
			c.buf, c.next, c.total = r.Data, c.next+len(r.Data)/c.per, r.NumBlocks
		}
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// slotRestore reads path into slot id's engine: its KV blocks when they
// fit that engine, otherwise by recomputing the tokens.
func (s *Server) slotRestore(c echo.Context, mover kvMover, id int, e engineclient.EngineState, path, name, salt string) error {
	ctx, start := c.Request().Context(), time.Now()
	s.slotTab.set(id, slotRecord{engine: e.Index}) // a failed restore leaves the slot empty, as llama-server's
	fail := func(format string, args ...any) error {
		return writeError(c, openai.BadRequest("filename", "Unable to restore slot: "+format, args...))
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%v", errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	file, err := slotfile.Read(f, st.Size(), s.cfg.MaxModelLen)
	switch {
	case errors.Is(err, slotfile.ErrMedia):
		return writeError(c, openai.BadRequest("filename", "%v", err))
	case err != nil:
		return fail("%v", err)
	case len(file.Tokens) >= s.cfg.MaxModelLen:
		return fail("Restored prompt does not fit in the slot context")
	}
	if oe := s.checkTokens("filename", file.Tokens); oe != nil {
		return fail("Invalid tokens in slot save file")
	}
	imported := 0
	if file.KV != nil {
		imported, err = importChain(ctx, mover, e.Index, file, salt)
		if err != nil {
			return writeError(c, engineError(err))
		}
	}
	if imported*blockSizeOf(file.KV) < len(file.Tokens)/max(e.Info.BlockSize, 1)*e.Info.BlockSize {
		// What could not be copied is computed, with one generated token
		// nobody reads: the prefix cache keeps the prompt's full blocks.
		if err := s.recompute(ctx, e, file.Tokens, salt); err != nil {
			return writeError(c, engineError(err))
		}
	}
	s.slotTab.set(id, slotRecord{engine: e.Index, tokens: file.Tokens, salt: salt})
	s.log.Info("slot restored", "slot", id, "file", name, "tokens", len(file.Tokens), "kv_blocks", imported)
	return c.JSON(http.StatusOK, map[string]any{"id_slot": id, "filename": name, "n_restored": len(file.Tokens), "n_read": st.Size(),
		"n_kv_blocks": imported, "timings": map[string]float64{"restore_ms": ms(time.Since(start))}})
}

// blockSizeOf is the tokens per block of a file's KV section (0: none).
func blockSizeOf(kv *slotfile.KV) int {
	if kv == nil {
		return 0
	}
	if n, ok := kv.Layout["block_size"].(int64); ok {
		return int(n)
	}
	return 0
}

// importChain writes file's KV blocks to engine i in chunks and returns
// how many are cached there; 0 when the engine takes none (another
// layout, another device): the caller recomputes.
func importChain(ctx context.Context, mover kvMover, i int, file *slotfile.File, salt string) (int, error) {
	per := file.KV.BytesPerBlock()
	limit := max(1, kvChunkBytes/per)
	buf := make([]byte, 0, min(limit, file.KV.NumBlocks)*per)
	cached := 0
	for first := 0; first < file.KV.NumBlocks; {
		n := min(limit, file.KV.NumBlocks-first)
		buf = buf[:n*per]
		if _, err := io.ReadFull(file.Data, buf); err != nil {
			return cached, fmt.Errorf("read the slot file: %w", err)
		}
		r, err := mover.KVImport(ctx, i, file.Tokens, salt, "", first, file.KV.Layout, buf)
		if err != nil {
			return cached, err
		}
		if r.Code != wire.KVTransferOK {
			return cached, nil
		}
		cached = r.NumBlocks
		first += n
	}
	return cached, nil
}

// recompute prefills tokens on engine e under salt, so that the prefix
// cache holds their full blocks.
func (s *Server) recompute(ctx context.Context, e engineclient.EngineState, tokens []int32, salt string) error {
	if len(tokens) == 0 {
		return nil
	}
	sp := wire.DefaultSamplingParams()
	sp.MaxTokens, sp.Temperature = 1, 0
	rank := e.Info.EngineIndex
	st, err := s.eng.Submit(ctx, &wire.EngineCoreRequest{RequestID: "slot-restore-" + randomHex(8), PromptTokenIDs: tokens,
		SamplingParams: sp, ArrivalTime: float64(time.Now().UnixNano()) / 1e9, CacheSalt: salt, DataParallelRank: &rank})
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		if _, err := st.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// slotErase evicts slot id's cached blocks and forgets its tokens.
func (s *Server) slotErase(c echo.Context, mover kvMover, id int) error {
	rec := s.slotTab.get(id)
	if len(rec.tokens) > 0 {
		if _, err := mover.KVEvict(c.Request().Context(), rec.engine, rec.tokens, rec.salt); err != nil {
			return writeError(c, engineError(err))
		}
	}
	s.slotTab.set(id, slotRecord{engine: rec.engine})
	return c.JSON(http.StatusOK, map[string]any{"id_slot": id, "n_erased": len(rec.tokens)})
}
