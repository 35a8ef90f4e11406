package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/skills"
)

func TestJudgeCompare(t *testing.T) {
	skill := defaultSkill(t, "executor")
	a := JudgeCandidate{ID: "b001c1", Content: skill + "\n- Check every output.\n"}
	b := JudgeCandidate{ID: "b001c2", Content: skill + "\n- Read errors before retrying.\n"}
	tests := []struct {
		name       string
		answers    []string
		first      JudgeCandidate
		second     JudgeCandidate
		wantWinner string
		fellBack   bool
	}{
		{"the first wins", []string{`{"winner":"first","reasoning":"more general"}`}, a, b, JudgeFirst, false},
		{"the second wins", []string{`{"winner":"second","reasoning":"more concrete"}`}, a, b, JudgeSecond, false},
		{"a bad answer is asked again", []string{`{"winner":"both","reasoning":"x"}`, `{"winner":"second","reasoning":"y"}`}, a, b, JudgeSecond, false},
		{"unusable twice is a draw", []string{`{"winner":"","reasoning":"x"}`, `not json`}, a, b, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.answers...)
			j := &Judge{Client: client(fake), Caller: "coevo/judge/b001", Seed: 3}
			v, err := j.Compare(context.Background(), JudgeInput{BatchID: "b001", CurrentSkill: skill, Proposals: sampleBatch(),
				Rejections: []string{"batch b000: REJECTED-EARLIER"}, First: tt.first, Second: tt.second})
			if err != nil {
				t.Fatal(err)
			}
			if v.Winner != tt.wantWinner || v.FellBack != tt.fellBack {
				t.Errorf("verdict %+v, want winner %q, fell back %v", v, tt.wantWinner, tt.fellBack)
			}
			req := fake.Requests()[0]
			user := req.Messages[1].Content
			if req.Kind != KindJudge || req.Caller != "coevo/judge/b001" {
				t.Errorf("kind %q caller %q", req.Kind, req.Caller)
			}
			for _, want := range []string{"## First candidate", "## Second candidate", "Check every output", "Read errors before retrying",
				"REJECTED-EARLIER", "NEW-ONE"} {
				if !strings.Contains(user, want) {
					t.Errorf("judge prompt lacks %q", want)
				}
			}
			if strings.Contains(user, "b001c1") {
				t.Error("the judge is shown a candidate's id, which could sway it")
			}
		})
	}
	if _, err := (&Judge{Client: client(llmtest.NewScripted())}).Compare(context.Background(), JudgeInput{First: a, Second: a}); err == nil {
		t.Error("a candidate compared with itself gives no error")
	}
}

// The offline judge prefers the same text whichever side it is shown on.
func TestOfflineJudgeHasNoPositionBias(t *testing.T) {
	skill := defaultSkill(t, "executor")
	j := &Judge{Client: client(llm.NewOffline(5)), Seed: 5}
	for i := range 6 {
		x := JudgeCandidate{ID: "x", Content: skill + strings.Repeat("\n- one more rule", i+1)}
		y := JudgeCandidate{ID: "y", Content: skill + "\n- another rule"}
		v1, err1 := j.Compare(context.Background(), JudgeInput{BatchID: "b001", First: x, Second: y, Proposals: sampleBatch()})
		v2, err2 := j.Compare(context.Background(), JudgeInput{BatchID: "b001", First: y, Second: x, Proposals: sampleBatch()})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if (v1.Winner == JudgeFirst) != (v2.Winner == JudgeSecond) {
			t.Errorf("pair %d: %s first then %s when swapped: the offline judge follows the position", i, v1.Winner, v2.Winner)
		}
	}
}

func TestPlannerVaryOffline(t *testing.T) {
	skill := defaultSkill(t, "executor")
	refined := offlineDraft(skill, "- NEW-ONE check outputs\n- NEW-TWO read errors")
	for _, op := range []Operator{OperatorCombine, OperatorSimplify, OperatorExplore} {
		t.Run(string(op), func(t *testing.T) {
			p := &Planner{Client: client(llm.NewOffline(7)), Caller: "coevo/draft/b001/c2", Seed: 7}
			partner := refined
			if op == OperatorExplore {
				partner = ""
			}
			got, fellBack, err := p.Vary(context.Background(), VariantInput{Operator: op, BatchID: "b001", CurrentSkill: skill,
				Proposals: sampleBatch(), Advice: "ok", Partner: partner, Index: 2})
			if err != nil || fellBack {
				t.Fatalf("Vary: %v, fell back %v", err, fellBack)
			}
			s, err := skills.Parse([]byte(got))
			if err != nil || s.Name != "executor" {
				t.Fatalf("candidate is not a valid executor skill (%v):\n%s", err, got)
			}
			if strings.TrimSpace(got) == strings.TrimSpace(skill) || strings.TrimSpace(got) == strings.TrimSpace(refined) {
				t.Errorf("%s gave the current skill or its refinement back", op)
			}
		})
	}
	p := &Planner{Client: client(llm.NewOffline(7))}
	if _, _, err := p.Vary(context.Background(), VariantInput{Operator: OperatorRefine, Proposals: sampleBatch()}); err == nil ||
		!strings.Contains(err.Error(), "refine is Draft") {
		t.Errorf("Vary with refine: %v, want an error pointing at Draft", err)
	}
}

func TestMetaReview(t *testing.T) {
	t.Run("no critiques make no call", func(t *testing.T) {
		fake := llmtest.NewScripted()
		r := &Reflector{Client: client(fake)}
		note, _, err := r.MetaReview(context.Background(), 4, "planner skill", []string{" ", ""})
		if err != nil || note != "" || fake.Count() != 0 {
			t.Errorf("note %q, err %v, %d calls", note, err, fake.Count())
		}
	})
	t.Run("critiques become a note", func(t *testing.T) {
		fake := llmtest.NewScripted(`{"note":"- Candidates keep restating rules the skill has."}`)
		r := &Reflector{Client: client(fake), Caller: "coevo/meta_review/i0004"}
		note, _, err := r.MetaReview(context.Background(), 4, "planner skill", []string{"judge: RESTATES-RULES", "Advisor: too vague"})
		if err != nil || !strings.Contains(note, "restating") {
			t.Fatalf("note %q, err %v", note, err)
		}
		req := fake.Requests()[0]
		if req.Kind != KindMetaReview || !strings.Contains(req.Messages[1].Content, "RESTATES-RULES") {
			t.Errorf("kind %q, prompt lacks the critiques:\n%s", req.Kind, req.Messages[1].Content)
		}
		if got := WithMetaReview("SKILL", note); !strings.Contains(got, "SKILL") || !strings.Contains(got, note) {
			t.Errorf("WithMetaReview = %q", got)
		}
		if got := WithMetaReview("SKILL\n", " "); got != "SKILL\n" {
			t.Errorf("WithMetaReview without a note = %q, want the skill unchanged", got)
		}
	})
}
