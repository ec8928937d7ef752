package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is the far end of the writer (a pipe, a file).
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestBufferedFlushesOnTickAndClose(t *testing.T) {
	out := &syncBuffer{}
	b := NewBuffered(out, 1<<16, 20*time.Millisecond)
	log := New(b, "test", "info")
	log.Info("first")
	require.Empty(t, out.String(), "a line waits for the tick")
	require.Eventually(t, func() bool { return strings.Contains(out.String(), `"msg":"first"`) }, time.Second, 5*time.Millisecond)

	// A long interval: only Close writes the line out.
	out2 := &syncBuffer{}
	b2 := NewBuffered(out2, 1<<16, time.Hour)
	New(b2, "test", "info").Info("last words")
	require.Empty(t, out2.String())
	require.NoError(t, b2.Close())
	require.Contains(t, out2.String(), `"msg":"last words"`)
	require.NoError(t, b.Close())
}

// Lines from many goroutines come out whole, all of them, in far fewer
// writes than lines; a full buffer is written out without waiting.
func TestBufferedKeepsLinesWhole(t *testing.T) {
	out := &syncBuffer{}
	b := NewBuffered(out, 4096, time.Hour)
	log := New(b, "test", "info")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				log.Info("line", "g", g, "i", i, "pad", strings.Repeat("x", 50))
			}
		}()
	}
	wg.Wait()
	require.NotEmpty(t, out.String(), "a full buffer does not wait for the tick")
	require.NoError(t, b.Close())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 8*500)
	seen := map[string]bool{}
	for _, l := range lines {
		var rec struct {
			G, I int
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		seen[fmt.Sprint(rec.G, "/", rec.I)] = true
	}
	require.Len(t, seen, 8*500)
	require.Less(t, out.writes, 8*500/10)
}
