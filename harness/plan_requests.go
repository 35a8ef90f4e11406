package harness

import (
	"cmp"
	"io/fs"
	"math"
	"os"
	"path"

	"github.com/mediated-coevo/harness/skills"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// callKind is what one kind of model call sends and gets back, in tokens:
// Frame is its fixed part (the system prompt, the output schema, the
// section headings), Inputs what varies with the run (the instruction, a
// transcript, a batch), both without the skill the call carries, which the
// model adds from the run's own skill sizes: the skill of Reads, else the
// role's own, none when NoSkill. Output is its answer.
type callKind struct {
	Role                  conditions.Role
	Frame, Inputs, Output float64
	Reads                 conditions.Role
	NoSkill               bool
	// Also is a second role whose skill the call carries besides its own
	// (the share and intake decisions read the lab's executor skill).
	Also conditions.Role
}

// The call kinds of a trial and of the evolution steps. Frames and inputs
// are the means of the requests an offline run of the smoke set sends
// (its call log), less the skill text: they follow the prompts of
// mediator and executor/lab, and TestDryRunTokensMatchTheSpend holds the
// model within a factor 1.5 of what such a run spends.
var (
	kindPlan     = callKind{Role: conditions.RolePlanner, Frame: 1200, Inputs: 800, Output: 100}
	kindProposal = callKind{Role: conditions.RolePlanner, Frame: 1400, Inputs: 800, Output: 70}
	kindReport   = callKind{Role: conditions.RoleMediator, Frame: 500, Inputs: 400, Output: 150}
	kindSummary  = callKind{Role: conditions.RoleCompactor, Frame: 500, Inputs: 1500, Output: 150, NoSkill: true}
	kindAdvice   = callKind{Role: conditions.RoleAdvisor, Frame: 800, Inputs: 1500, Output: 100, Reads: conditions.RoleExecutor}
	kindDraft    = callKind{Role: conditions.RolePlanner, Frame: 800, Inputs: 1500, Output: 1600, Reads: conditions.RoleExecutor}
	kindReflect  = callKind{Role: conditions.RoleReflector, Frame: 900, Inputs: 2500, Output: 200}
	// The Mediator's routing reads every student's proposals of an
	// iteration, as a review reads a batch.
	kindRoute = callKind{Role: conditions.RoleMediator, Frame: 700, Inputs: 1500, Output: 150, Reads: conditions.RoleExecutor}
	// An Executor call sends the system prompt, the tools, the skill, the
	// plan and the instruction, then the transcript so far: each call adds
	// its tool result (ToolResult on average) to every call after it.
	kindAgent = callKind{Role: conditions.RoleExecutor, Frame: 300, Inputs: 230, Output: 25}
	// A network lab's Mediator decides at each barrier what to send each
	// neighbour (share: the lines its skill gained, its reports) and
	// whether each item received goes on (intake: the item); both carry
	// its protocol and the lab's executor skill. The answer's content is
	// cut to [network] token_budget.
	kindShare  = callKind{Role: conditions.RoleMediator, Frame: 150, Inputs: 300, Output: 100, Also: conditions.RoleExecutor}
	kindIntake = callKind{Role: conditions.RoleMediator, Frame: 150, Inputs: 300, Output: 40, Also: conditions.RoleExecutor}
)

// DiffusionCalls are the Mediator calls a network row makes at each of
// its diffusion barriers, for the estimate: a share decision per neighbour
// it may send to and, at most, an intake decision per neighbour that may
// send to it. Rows of other treatments make none.
type DiffusionCalls struct {
	// Interval is the iterations between two barriers.
	Interval      int
	Share, Intake int
}

// diffusionRequests adds the share and intake decisions of the barriers
// in a row's remaining iterations: every multiple of the interval above
// the iterations already done.
func diffusionRequests(tokens map[conditions.Role]roleTokens, m requestModel, d DiffusionCalls, iterations, done int) {
	every := max(1, d.Interval)
	barriers := float64(max((done+iterations)/every-done/every, 0))
	m.add(tokens, kindShare, barriers*float64(d.Share))
	m.add(tokens, kindIntake, barriers*float64(d.Intake))
}

// agentToolResult is the mean tokens one tool result adds to the
// transcript the calls after it resend.
const agentToolResult = 500

// offlineAgentCalls is how many calls the offline agent makes per trial:
// it lists the working directory, reads the inputs the instruction names,
// writes the outputs when diligent, and submits.
const offlineAgentCalls = 3.2

// proposalRate is the share of trials whose Planner proposes an edit of the
// executor skill when it is asked to (the offline Planner's rate on the
// smoke set); a batch reaches the Advisor when the buffer holds
// advisor_buffer_max of them at the end of an iteration.
const proposalRate = 0.6

// requestModel estimates a row's tokens from what each role sends per
// call, how many calls each unit of work makes, and the skills the roles
// read (in tokens).
type requestModel struct {
	cfg     *config.Config
	lab     config.Lab
	agent   string
	offline bool
	skill   map[conditions.Role]float64
}

// agentCalls is the Executor's expected calls per trial: what the offline
// agent does offline, else half the lab's call cap (a model that uses all
// of it is the upper bound; --estimate-from measures the real number).
func (m requestModel) agentCalls() float64 {
	if !ModelDriven(m.agent) {
		return 0
	}
	if m.offline {
		return offlineAgentCalls
	}
	return math.Max(1, float64(m.lab.MaxModelCalls)/2)
}

// add adds n calls of kind k to into.
func (m requestModel) add(into map[conditions.Role]roleTokens, k callKind, n float64) {
	skill := m.skill[cmp.Or(k.Reads, k.Role)]
	if k.NoSkill {
		skill = 0
	}
	if k.Also != "" {
		skill += m.skill[k.Also]
	}
	t := into[k.Role]
	into[k.Role] = roleTokens{t.in + n*(k.Frame+k.Inputs+skill), t.out + n*k.Output}
}

// work adds n trials' Executor loops, and their plans when planned:
// training and evaluation trials are, validation trials are not (they
// compare two executor skills on the bare instruction). Agents that call
// no model (oracle, nop) get no plan either.
func (m requestModel) work(into map[conditions.Role]roleTokens, n float64, planned bool) {
	if planned && ModelDriven(m.agent) {
		m.add(into, kindPlan, n)
	}
	c := m.agentCalls()
	if c == 0 {
		return
	}
	// Call i resends the i-1 tool results before it: c(c-1)/2 in all.
	agent := kindAgent
	agent.Inputs += agentToolResult * (c - 1) / 2
	role := conditions.RoleExecutor
	if m.lab.ExecutorMode == config.ModeHierarchical {
		// The coordinator dispatches; its subagents do the work, each
		// within its own call cap, as the Executor does in single mode.
		sub := float64(m.lab.ExploreQuota + m.lab.PlanQuota + m.lab.CodeQuota)
		m.add(into, agent, n*c)
		for _, r := range []conditions.Role{conditions.RoleExplore, conditions.RolePlan, conditions.RoleCode} {
			agent.Role = r
			m.add(into, agent, n*c*sub/3)
		}
		return
	}
	agent.Role = role
	m.add(into, agent, n*c)
}

// skillTokens is the size of the skill each role reads: the skills a run
// starts from ([experiment] skills_dir, else the shipped defaults). A
// subagent reads the executor skill; a skill that cannot be read counts as
// empty, which the run itself would refuse.
func (p *Plan) skillTokens(cfg *config.Config) map[conditions.Role]float64 {
	var fsys fs.FS = skills.DefaultFS()
	if dir := cfg.Experiment.SkillsDir; dir != "" {
		fsys = os.DirFS(dir)
	}
	out := map[conditions.Role]float64{}
	for _, role := range []conditions.Role{conditions.RoleExecutor, conditions.RolePlanner, conditions.RoleMediator} {
		if data, err := fs.ReadFile(fsys, path.Join(string(role), "SKILL.md")); err == nil {
			out[role] = float64(len(data)) / charsPerToken
		}
	}
	for _, role := range []conditions.Role{conditions.RoleExplore, conditions.RolePlan, conditions.RoleCode} {
		out[role] = out[conditions.RoleExecutor]
	}
	// The Reflector reads the meta-skill it revises, about a planner's size.
	out[conditions.RoleReflector] = out[conditions.RolePlanner]
	return out
}

// charsPerToken is the characters per token the ledger's own estimates
// use (llm.RequestTokens).
const charsPerToken = 4
