package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

const checkAnswer = "- Check the answer file before you submit."

// routeCase is a lab of a diligent student, whose trials score and who
// proposed the diligence advice, and a sloppy one, whose trials do not.
func routeCase(to string, budget int) RouteInput {
	diligent := []RouteItem{
		{ID: "i0001-a", From: "diligent", TaskID: "a", Iteration: 1, Outcome: Outcome{Status: "scored", Reward: ptr(1)},
			Feedback: "Wrote every output file before submitting.", Proposal: &Proposal{ID: "p-a", NewContent: executor.DiligenceAdvice}},
		{ID: "i0001-b", From: "diligent", TaskID: "b", Iteration: 1, Outcome: Outcome{Status: "scored", Reward: ptr(1)},
			Feedback: "Checked the answer.", Proposal: &Proposal{ID: "p-b", NewContent: checkAnswer}},
	}
	sloppy := []RouteItem{
		{ID: "i0001-c", From: "sloppy", TaskID: "c", Iteration: 1, Outcome: Outcome{Status: "scored", Reward: ptr(0)},
			Feedback: "No output file.", Proposal: &Proposal{ID: "p-c", NewContent: checkAnswer}},
	}
	in := RouteInput{To: to, Iteration: 1, Skill: offlineTestSkill, MaxItems: budget, MaxChars: 200}
	if to == "sloppy" {
		in.Own, in.Others = sloppy, diligent
	} else {
		in.Own, in.Others = diligent, sloppy
	}
	return in
}

func TestOfflineRouteGivesEachStudentWhatItLacks(t *testing.T) {
	tests := []struct {
		name   string
		in     RouteInput
		routes []string // item/form
	}{
		{"the sloppy student gets the diligence advice, forwarded", routeCase("sloppy", 1), []string{"i0001-a/proposal"}},
		{"with room, also a note from a better trial whose edit it already proposed", routeCase("sloppy", 2),
			[]string{"i0001-a/proposal", "i0001-b/note"}},
		{"the diligent student lacks nothing the sloppy one has", routeCase("diligent", 2), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Mediator{Client: client(llm.NewOffline(3)), Caller: "coevo/route/x/i0001", MaxChars: 200}
			routes, fellBack, err := m.Route(context.Background(), tt.in)
			if err != nil || fellBack {
				t.Fatalf("Route: %v (fell back %v)", err, fellBack)
			}
			var got []string
			for _, r := range routes {
				got = append(got, r.Item.ID+"/"+r.Form)
				if r.Reason == "" || r.Item.From == tt.in.To {
					t.Errorf("route %+v has no reason or comes from the student it reaches", r)
				}
				if r.Form == FormNote && (r.Note == "" || len([]rune(r.Note)) > 200) {
					t.Errorf("note %q is empty or over the cap", r.Note)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.routes, " ") {
				t.Errorf("routes %v, want %v", got, tt.routes)
			}
		})
	}
}

func TestRouteAnswerIsChecked(t *testing.T) {
	in := routeCase("sloppy", 1)
	items := map[string]RouteItem{}
	for _, it := range in.Others {
		items[it.ID] = it
	}
	noProposal := in.Others[0]
	noProposal.ID, noProposal.Proposal = "i0001-z", nil
	items[noProposal.ID] = noProposal
	tests := []struct {
		name string
		ans  RouteAnswer
		want string
	}{
		{"over budget", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-a", Form: FormProposal, Reason: "r"}, {Item: "i0001-b", Form: FormProposal, Reason: "r"}}}, "over the budget"},
		{"unknown item", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-c", Form: FormNote, Note: "n", Reason: "r"}}}, "no item of another student"},
		{"unknown form", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-a", Form: "copy", Reason: "r"}}}, "use note or proposal"},
		{"forwarding nothing", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-z", Form: FormProposal, Reason: "r"}}}, "carries no proposal"},
		{"empty note", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-a", Form: FormNote, Reason: "r"}}}, "with no note"},
		{"no reason", RouteAnswer{Routes: []RouteDecision{{Item: "i0001-a", Form: FormProposal}}}, "without a reason"},
	}
	for _, tt := range tests {
		err := tt.ans.check(items, in.MaxItems)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one that says %q", tt.name, err, tt.want)
		}
	}
	if err := (RouteAnswer{}).check(items, 1); err != nil {
		t.Errorf("routing nothing is refused: %v", err)
	}
}

// An unusable answer, twice, routes nothing and says it fell back.
func TestRouteFallsBackToRoutingNothing(t *testing.T) {
	bad := llmtest.JSONText(RouteAnswer{Routes: []RouteDecision{{Item: "nope", Form: FormNote, Note: "n", Reason: "r"}}})
	m := &Mediator{Client: client(llmtest.NewScripted(bad, bad)), Caller: "coevo/route/sloppy/i0001"}
	routes, fellBack, err := m.Route(context.Background(), routeCase("sloppy", 2))
	if err != nil || !fellBack || len(routes) != 0 {
		t.Errorf("routes %v, fell back %v, err %v; want nothing routed, fallen back", routes, fellBack, err)
	}
}

func TestOfflineRouteMatchesItsSchema(t *testing.T) {
	for _, to := range []string{"sloppy", "diligent"} {
		msg, err := llm.JSONAnswer(offlineRoute(routeCase(to, 2)))
		if err != nil {
			t.Fatal(err)
		}
		checkMatchesSchema(t, "route to "+to, msg.Content, routeSchema())
	}
}
