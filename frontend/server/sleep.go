package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// Sleep mode over HTTP: vLLM's dev endpoints (with --enable-sleep-mode)
// POST /sleep?level=&mode=, POST /wake_up?tags=, GET /is_sleeping and POST
// /release_kv_cache_memory, on every engine at once; llama-server's
// is_sleeping in /props; and the touch that wakes engines asleep idle
// (--sleep-idle-seconds) for the requests llama-server counts as work
// but that never reach an engine here (tokenizing, templates).

// sleeper is what sleep mode needs of the engines (engineclient.Client).
type sleeper interface {
	Sleep(ctx context.Context, level int, mode string) error
	WakeUp(ctx context.Context, tags []string) (bool, error)
	IsSleeping(ctx context.Context) (bool, error)
	ReleaseKVCacheMemory(ctx context.Context) error
	Touch(ctx context.Context) error
}

// sleepPaths are sleepRoutes' paths (for the OpenAPI document).
var sleepPaths = map[string]bool{"/sleep": true, "/wake_up": true, "/is_sleeping": true, "/release_kv_cache_memory": true}

func (s *Server) sleepRoutes(e *echo.Echo) {
	if !s.cfg.EnableSleepMode {
		return
	}
	e.POST("/sleep", s.sleep)
	e.POST("/wake_up", s.wakeUp)
	e.GET("/is_sleeping", s.isSleeping)
	e.POST("/release_kv_cache_memory", s.releaseKV)
}

// sleeperOf returns the engines' sleep mode, or the error to answer.
func (s *Server) sleeperOf() (sleeper, *openai.Error) {
	sl, ok := s.eng.(sleeper)
	if !ok {
		return nil, &openai.Error{Status: http.StatusNotImplemented, Type: "not_implemented_error", Message: "these engines have no sleep mode"}
	}
	return sl, nil
}

func (s *Server) sleep(c echo.Context) error {
	level, mode := 1, "abort"
	q := c.QueryParams()
	if v, ok := q["level"]; ok {
		n, err := strconv.Atoi(v[len(v)-1])
		if err != nil || n < 0 || n > 2 {
			return writeError(c, openai.BadRequest("query.level", "level must be an integer from 0 to 2, not %q", v[len(v)-1]))
		}
		level = n
	}
	if v, ok := q["mode"]; ok {
		mode = v[len(v)-1]
		if !slices.Contains([]string{"abort", "wait", "keep"}, mode) {
			return writeError(c, openai.BadRequest("query.mode", "mode must be one of 'abort', 'wait', 'keep', not %q", mode))
		}
	}
	sl, oe := s.sleeperOf()
	if oe != nil {
		return writeError(c, oe)
	}
	done := s.metrics.SleepOperation("sleep")
	err := sl.Sleep(c.Request().Context(), level, mode)
	done()
	if err != nil {
		return writeError(c, engineError(err))
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "sleeping", "level": level})
}

func (s *Server) wakeUp(c echo.Context) error {
	tags := c.QueryParams()["tags"] // nil: every tag
	sl, oe := s.sleeperOf()
	if oe != nil {
		return writeError(c, oe)
	}
	done := s.metrics.SleepOperation("wake")
	awake, err := sl.WakeUp(c.Request().Context(), tags)
	done()
	if err != nil {
		return writeError(c, engineError(err))
	}
	status := "sleeping"
	if awake {
		status = "awake"
	}
	return c.JSON(http.StatusOK, map[string]any{"status": status, "tags": tags})
}

func (s *Server) isSleeping(c echo.Context) error {
	sl, oe := s.sleeperOf()
	if oe != nil {
		return writeError(c, oe)
	}
	asleep, err := sl.IsSleeping(c.Request().Context())
	if err != nil {
		return writeError(c, engineError(err))
	}
	return c.JSON(http.StatusOK, map[string]bool{"is_sleeping": asleep})
}

func (s *Server) releaseKV(c echo.Context) error {
	sl, oe := s.sleeperOf()
	if oe != nil {
		return writeError(c, oe)
	}
	done := s.metrics.SleepOperation("release_kv_cache_memory")
	err := sl.ReleaseKVCacheMemory(c.Request().Context())
	done()
	if err != nil {
		return writeError(c, engineError(err))
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "kv_cache_released"})
}

// sleeping reports whether an engine sleeps, asking them (a second at
// most) and else going by their last reports.
func (s *Server) sleeping(ctx context.Context) bool {
	asleep := false
	if sl, ok := s.eng.(sleeper); ok {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var err error
		if asleep, err = sl.IsSleeping(ctx); err != nil {
			asleep = false
			for _, e := range s.eng.Engines() {
				asleep = asleep || e.Ready && e.Stats.Sleeping
			}
		}
	}
	if asleep {
		s.sleepSeen.Store(true)
	}
	return asleep
}

// touch tells the engines that this frontend is at work without a
// request for them: their idle timers restart, and one asleep idle
// wakes, as llama-server wakes for any task. Only once an engine was
// seen asleep (in a report or an answer: sleep mode is in use), so that
// deployments without it pay no round trip; errors are only logged,
// since the work itself does not need an engine.
func (s *Server) touch(ctx context.Context) {
	sl, ok := s.eng.(sleeper)
	if !ok {
		return
	}
	if !s.sleepSeen.Load() {
		for _, e := range s.eng.Engines() {
			if e.Ready && e.Stats.Sleeping {
				s.sleepSeen.Store(true)
			}
		}
	}
	if !s.sleepSeen.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := sl.Touch(ctx); err != nil {
		s.log.Warn("telling the engines of activity", "err", err)
	}
}

// waking is h after a touch: llama-server wakes for every task, and
// tokenizing and rendering templates are tasks there.
func (s *Server) waking(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		s.touch(c.Request().Context())
		return h(c)
	}
}
