package lab

import (
	"context"
	"io/fs"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/skills"
)

// The Executor's consecutive requests repeat the earlier one as a prefix,
// so a provider's prefix cache can serve most of each; the cached tokens
// the server reports reach the ledger.
func TestLabRequestsSharePrefixAndCachedTokensReachLedger(t *testing.T) {
	sb := newLabFakeSandbox(map[string]string{"/app/in.txt": "hello\n"})
	srv := llmtest.NewServer(t)
	srv.CachePrefixes()
	srv.Push(
		wireCall("c1", ToolListDir, map[string]string{"path": "."}),
		wireCall("c2", ToolReadFile, map[string]string{"path": "in.txt"}),
		wireCall("c3", ToolRunCommand, map[string]any{"command": "cat in.txt | wc -l", "timeout_sec": 5}),
		wireCall("c4", ToolWriteFile, map[string]string{"path": "/app/out.txt", "content": "1\n"}),
		wireCall("c5", ToolSubmit, map[string]string{"summary": "wrote the line count"}),
	)
	sb.commands["cat in.txt | wc -l"] = executor.ExecResult{Stdout: "1\n"}
	ledger := llm.NewLedger(llm.Limits{})
	in := labInput(t, sb, "Count the lines of /app/in.txt into /app/out.txt.")
	// The shipped skill, as a run would send it.
	skill, err := fs.ReadFile(skills.DefaultFS(), "executor/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	in.ExecutorSkill = string(skill)
	if _, err := NewAgent(labTestLab(config.ModeSingle), labOpenAIClients(t, srv, ledger)).Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests; want 5", len(reqs))
	}
	var wantCached int64
	for i := 1; i < len(reqs); i++ {
		n, share, err := llmtest.RepeatedPrefix(reqs[i-1], reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		if share < 0.8 {
			t.Errorf("requests %d and %d share a prefix of %.3f; want >= 0.8", i, i+1, share)
		} else {
			t.Logf("requests %d and %d: repeated-prefix share %.3f", i, i+1, share)
		}
		// wireCall reports 1000 prompt tokens, which caps what is cached.
		wantCached += min(int64(n)/4, 1000)
	}
	if got := ledger.Total().CachedInputTokens; got != wantCached || got == 0 {
		t.Errorf("ledger holds %d cached input tokens; the server reported %d", got, wantCached)
	}
}
