package chattemplate

import (
	"strconv"
	"strings"
	"time"
)

// strftime formats t as Python's time.strftime does in the C locale, for the
// directives chat templates use: %Y %y %m %d %e %B %b %h %H %I %M %S %p %A %a
// %j %% . Other directives are copied unchanged.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			pad(&b, t.Year()%100, 2)
		case 'm':
			pad(&b, int(t.Month()), 2)
		case 'd':
			pad(&b, t.Day(), 2)
		case 'e':
			if t.Day() < 10 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(t.Day()))
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'H':
			pad(&b, t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			pad(&b, h, 2)
		case 'M':
			pad(&b, t.Minute(), 2)
		case 'S':
			pad(&b, t.Second(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'j':
			pad(&b, t.YearDay(), 3)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func pad(b *strings.Builder, n, width int) {
	s := strconv.Itoa(n)
	for range width - len(s) {
		b.WriteByte('0')
	}
	b.WriteString(s)
}
