package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/prompts"
)

// Agent is one member of the team the multi-agent strategies work with
// (docs/strategies.md: supervisor, magentic, group_chat): a name that is the role
// of its steps, what it is for (the supervisor reads it when choosing),
// its part of the system prompt, and the only tools its steps may call.
type Agent struct {
	Name        string
	Description string
	System      string
	Tools       []string
}

// BuiltinAgents are the team when TASKLOOM_AGENTS is not set: a
// researcher that reads, a writer that writes and a reviewer that reads
// only.
func BuiltinAgents() []Agent {
	return []Agent{
		{Name: "researcher", Description: "finds things out: fetches web pages and reads the task's files and earlier results",
			System: "You are the researcher. You gather the facts the task needs from the web and from the task's files, and you report what you found, with sources.",
			Tools:  []string{"http_get", "read_file", "list_files", "read_result"}},
		{Name: "writer", Description: "writes and revises the task's files",
			System: "You are the writer. You turn what the team has found into the files the task asks for, clear and complete.",
			Tools:  []string{"write_file", "read_file", "list_files"}},
		{Name: "reviewer", Description: "reads what the team wrote and says what is wrong or missing; changes nothing",
			System: "You are the reviewer. You read what the team wrote, check it against the goal, and say precisely what is wrong or missing.",
			Tools:  []string{"read_file", "list_files", "read_result"}},
	}
}

// Limits and choices of the multi-agent strategies (docs/strategies.md).
const (
	// DefaultMaxSteps is how many decisions a supervisor makes for one
	// task before it ends in stalemate.
	DefaultMaxSteps = 25
	// DefaultMaxStalls is how many times in a row magentic's supervisor
	// may choose the same agent; once more makes it replan.
	DefaultMaxStalls = 2
	// DefaultRounds is how many rounds a group chat runs: in each, every
	// agent speaks once.
	DefaultRounds = 6
	// SpeakerRoundRobin and SpeakerModel are how a group chat chooses who
	// speaks: in turn, or as the model decides (TASKLOOM_GROUP_CHAT_SPEAKER).
	SpeakerRoundRobin = "round_robin"
	SpeakerModel      = "model"
	// NextDone is what a supervisor answers as next when the goal is met.
	NextDone = "DONE"
)

// TeamOptions are the limits of the multi-agent strategies; zero values
// are the defaults.
type TeamOptions struct {
	MaxSteps  int    // supervisor decisions per task (max_steps)
	MaxStalls int    // magentic's max_stalls
	Rounds    int    // group chat rounds
	Speaker   string // SpeakerRoundRobin (or "") or SpeakerModel
}

// team is a service's agents and limits, as the strategies use them.
type team struct {
	agents []Agent
	TeamOptions
}

func newTeam(agents []Agent, o TeamOptions) team {
	if len(agents) == 0 {
		agents = BuiltinAgents()
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxStalls <= 0 {
		o.MaxStalls = DefaultMaxStalls
	}
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if o.Speaker == "" {
		o.Speaker = SpeakerRoundRobin
	}
	return team{agents: slices.Clone(agents), TeamOptions: o}
}

// agent finds an agent by name, ignoring case: a model may well write
// "Researcher".
func (tm team) agent(name string) (Agent, bool) {
	name = strings.TrimSpace(name)
	for _, a := range tm.agents {
		if a.Name == name {
			return a, true
		}
	}
	for _, a := range tm.agents {
		if strings.EqualFold(a.Name, name) {
			return a, true
		}
	}
	return Agent{}, false
}

func (tm team) names() []string {
	out := make([]string, len(tm.agents))
	for i, a := range tm.agents {
		out[i] = a.Name
	}
	return out
}

// index is where name stands in the team, -1 when it is not an agent.
func (tm team) index(name string) int {
	return slices.IndexFunc(tm.agents, func(a Agent) bool { return a.Name == name })
}

// listed says which the agents are, for a sentence refusing a name that
// is none of them.
func (tm team) listed() string { return "they are " + strings.Join(tm.names(), ", ") }

// agentView is what a prompt shows of an agent.
type agentView struct {
	Name, Description, System string
	Tools                     string
}

func (tm team) views() []agentView {
	out := make([]agentView, len(tm.agents))
	for i, a := range tm.agents {
		out[i] = viewOf(a)
	}
	return out
}

func viewOf(a Agent) agentView {
	tools := "none"
	if len(a.Tools) > 0 {
		tools = strings.Join(a.Tools, ", ")
	}
	return agentView{Name: a.Name, Description: a.Description, System: a.System, Tools: tools}
}

// teamState is what a multi-agent strategy keeps in the task's State
// between claims. Whose turn it is is the task's Phase.
type teamState struct {
	// Instruction is what the supervisor asked of the agent whose turn it
	// is, until that agent's step commits.
	Instruction string `json:"instruction,omitempty"`
	// Decisions counts the supervisor's decisions (max_steps).
	Decisions int `json:"decisions,omitempty"`
	// Turns counts a group chat's turns (rounds × agents).
	Turns int `json:"turns,omitempty"`
	// Replan says magentic's supervisor must make a new plan on its next
	// turn; Replanned that it has used its one replan.
	Replan    bool `json:"replan,omitempty"`
	Replanned bool `json:"replanned,omitempty"`
}

func stateOf(t domain.Task) teamState {
	var s teamState
	if t.State != "" {
		_ = json.Unmarshal([]byte(t.State), &s) // a state this strategy did not write starts afresh
	}
	return s
}

func (s teamState) encode() string {
	raw, err := json.Marshal(s)
	if err != nil {
		return "{}" // a struct of strings, ints and bools always encodes
	}
	return string(raw)
}

// teamTurn is one claim of a multi-agent strategy: the turn, the team and
// the state the claim started from.
type teamTurn struct {
	*Turn
	team  team
	state teamState
}

func newTeamTurn(t *Turn) *teamTurn {
	return &teamTurn{Turn: t, team: t.it.team, state: stateOf(t.Task)}
}

// ask makes the claim's model call with r's prompt, its system message
// rendered from the template system with data (the team's own: an
// agent's part, the roster), so that it stays the same for every task of
// the team and cacheable.
func (tt *teamTurn) ask(ctx context.Context, o *domain.Outcome, r Request, system string, data map[string]any) (plugin.ModelResponse, error) {
	msgs, err := tt.Messages(r)
	if err != nil {
		return plugin.ModelResponse{}, fmt.Errorf("prompt of task #%d: %w", tt.Task.Number, err)
	}
	data["System"] = tt.system
	sys, err := prompts.Render(system, data)
	if err != nil {
		return plugin.ModelResponse{}, fmt.Errorf("prompt of task #%d: %w", tt.Task.Number, err)
	}
	msgs[0].Content = sys
	return tt.Call(ctx, o, plugin.ModelRequest{Messages: msgs, Schema: r.Schema}, r.Role, r.Temperature)
}

// SupervisorHistory is the history a supervisor's prompt shows: it
// routes the work rather than doing it, so it sees the latest steps in
// short and fewer older ones, and its prompt stays within the bound of docs/PERFORMANCE.md
// (at step 50 at most 1.5× its size at step 5) however long the task.
var SupervisorHistory = History{Block: 3, LatestChars: 2000, RecentChars: 600, Condensed: 5, CondensedChars: 140,
	Answers: 3, AnswerChars: 400, ParamsChars: 200}

// speakers is the note that says who took the steps the prompt shows
// where the transcript does not (a step handed on by the supervisor's
// step just before it is named there), newest last, so that an agent or
// the supervisor knows who did what. It covers the steps the history
// shows, so it is bounded as the history is.
func (tt *teamTurn) speakers(h History) string {
	from := max(0, len(tt.Steps)-h.Window())
	var parts []string
	for i := from; i < len(tt.Steps); i++ {
		s := tt.Steps[i]
		if s.Role == "" || s.Role == domain.RoleSupervisor {
			continue
		}
		if i > 0 && tt.Steps[i-1].Role == domain.RoleSupervisor && tt.Steps[i-1].Action == s.Role {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", s.Iteration, s.Role))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Who took those steps (step, agent): " + strings.Join(parts, ", ") + "."
}

// notes are the notes of a request whose history is h, with the
// speakers note first.
func (tt *teamTurn) notes(h History, more ...string) []string {
	var out []string
	if s := tt.speakers(h); s != "" {
		out = append(out, s)
	}
	for _, n := range more {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// agentStep is one step of agent a: the loop's decision, asked with only a's
// tools shown, and run only if it names one of them. note says what the
// agent is asked (the supervisor's instruction, the group chat's turn).
// A reply that is not a decision, or a tool a does not have, is a failed
// step. The verdict is the decision's; the caller decides what done and
// stuck mean for its strategy.
func (tt *teamTurn) agentStep(ctx context.Context, a Agent, note, instruction string) (domain.Outcome, Decision, error) {
	o := tt.Outcome()
	o.Step.Role = a.Name
	tools := agentTools(tt.Runtime, tt.Task, a)
	resp, err := tt.ask(ctx, &o, Request{Role: a.Name, Tools: tools, Notes: tt.notes(tt.it.History, note), Instruction: instruction, Schema: DecisionSchema},
		"team_agent_system.tmpl", map[string]any{"Agent": viewOf(a), "Tools": tools, "Team": tt.team.views()})
	if err != nil {
		return domain.Outcome{}, Decision{}, err
	}
	d, err := ParseDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		tt.Fail(&o, "", "the model's reply is not a usable decision: "+err.Error())
		return o, Decision{}, nil
	}
	if d.Action != "" && !slices.Contains(a.Tools, d.Action) {
		o.Step.Thought, o.Step.Params = d.Thought, d.Params
		has := "no tools"
		if len(a.Tools) > 0 {
			has = "only " + strings.Join(a.Tools, ", ")
		}
		tt.Fail(&o, d.Action, fmt.Sprintf("%s can use %s; %q is not one of its tools", a.Name, has, d.Action))
		return o, d, nil
	}
	// The stall guard compares a step with the agent's own last one: the
	// step before it is the supervisor's or another agent's.
	own := *tt.Turn
	own.Steps = nil
	for _, s := range tt.Steps {
		if s.Role == a.Name {
			own.Steps = append(own.Steps, s)
		}
	}
	own.Decide(ctx, &o, d)
	return o, d, nil
}

// agentTools are the runtime's tools that a may use, as the prompt shows
// them; a tool a names that the runtime does not have (an MCP server that
// is down) is left out.
func agentTools(rt *plugin.Runtime, task domain.Task, a Agent) []Tool {
	tools := []Tool{}
	for _, t := range ToolsOf(rt, task) {
		if slices.Contains(a.Tools, t.Name) {
			tools = append(tools, t)
		}
	}
	return tools
}

// reportBack turns an agent's done or stuck into a report to the
// supervisor, who decides what it means for the task: the claim
// continues, and the agent's summary is kept with its thought.
func reportBack(o *domain.Outcome, d Decision) {
	if o.Verdict == domain.VerdictContinue {
		return
	}
	if d.Summary != "" {
		o.Step.Thought = strings.TrimSpace(o.Step.Thought + "\nReports " + string(d.Status) + ": " + d.Summary)
	}
	o.Verdict, o.Reason, o.Summary = domain.VerdictContinue, "", ""
}
