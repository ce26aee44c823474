package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// logFlags are shared by every command.
type logFlags struct {
	level  string // debug, info, warn, error
	format string // text, json
}

func (l *logFlags) logger(w io.Writer, attrs ...any) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(l.level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch l.format {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", l.format)
	}
	lg := slog.New(h).With(attrs...)
	slog.SetDefault(lg)
	return lg, nil
}

func stderrLogger(l *logFlags, attrs ...any) (*slog.Logger, error) {
	return l.logger(os.Stderr, attrs...)
}
