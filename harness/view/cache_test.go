package view

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCacheComputesOnceUntilFilesChange(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "run.json"), []byte(`{"kind":"run"}`))
	c := newCache(8)
	var calls atomic.Int32
	compute := func() (any, error) {
		calls.Add(1)
		time.Sleep(20 * time.Millisecond) // long enough for the others to find it under way
		return "value", nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.get("k", dir, compute); err != nil || v != "value" {
				t.Errorf("get = %v, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("8 concurrent gets computed %d times, want 1", n)
	}
	mustWrite(t, filepath.Join(dir, "metrics", "part-00001.parquet"), []byte("new"))
	if _, err := c.get("k", dir, compute); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("after a new metrics part: %d computations, want 2", n)
	}
	if _, err := c.get("other", dir, compute); err != nil || calls.Load() != 3 {
		t.Errorf("another key shared the value: %d computations, want 3", calls.Load())
	}
}

func TestCacheEvictsTheOldest(t *testing.T) {
	dir := t.TempDir()
	c := newCache(2)
	for _, k := range []string{"a", "b", "c"} {
		c.get(k, dir, func() (any, error) { return k, nil })
	}
	if len(c.entries) != 2 {
		t.Errorf("cache of 2 holds %d entries", len(c.entries))
	}
	recomputed := false
	c.get("a", dir, func() (any, error) { recomputed = true; return "a", nil })
	if !recomputed {
		t.Error("the oldest entry was kept past the limit")
	}
}

func TestWarmReadsTheNewestMatrixAhead(t *testing.T) {
	s, root := newTestServer(t)
	s.warm(context.Background())
	dir := filepath.Join(s.root, fixtureMatrix)
	for _, key := range []string{"listed", "compare", "tasks", "series"} {
		if _, ok := s.cache.entries[key+"\x00"+dir]; !ok {
			t.Errorf("after warm the cache lacks %s of %s", key, filepath.Join(root, fixtureMatrix))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fresh, _ := New(root)
	fresh.warm(ctx)
	if len(fresh.cache.entries) != 0 {
		t.Errorf("a cancelled warm-up computed %d views, want none", len(fresh.cache.entries))
	}
}

func TestViewsRecomputeOnlyForTheirOwnFiles(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "run.json"), []byte(`{"kind":"run"}`))
	c := newCache(8)
	n := map[string]int{}
	get := func(key string) {
		c.get(key, dir, func() (any, error) { n[key]++; return key, nil })
	}
	get("compare")
	get("calls")
	get("routing")
	mustWrite(t, filepath.Join(dir, "history", "calls.jsonl"), []byte("{}\n"))
	get("compare")
	get("calls")
	get("routing")
	if n["compare"] != 1 || n["calls"] != 2 || n["routing"] != 1 {
		t.Errorf("after a new call record: compare computed %d times (want 1), calls %d (want 2), routing %d (want 1)", n["compare"], n["calls"], n["routing"])
	}
	mustWrite(t, filepath.Join(dir, "history", "history.jsonl"), []byte("{}\n"))
	get("routing")
	if n["routing"] != 2 {
		t.Errorf("after a new history record the routing was computed %d times, want 2", n["routing"])
	}
	mustWrite(t, filepath.Join(dir, "metrics", "part-00001.parquet"), []byte("x"))
	get("compare")
	if n["compare"] != 2 {
		t.Errorf("after a new metrics part the comparison was computed %d times, want 2", n["compare"])
	}
}
