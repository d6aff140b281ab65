package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// review is taskcore's strategy (docs/strategies.md). A task moves through phases
// — analysis, then execution or decomposition into subtasks, then review —
// along the rows of domain.ReviewTransitions, one row at most per claim,
// so the event log shows each move and `taskloom check` verifies it:
//
//   - analysis (role analysis) decides to execute, with a plan, or to
//     decompose: its subtasks are created with create_subtask and the task
//     waits on them (waiting_on: subtasks);
//   - execution (role agent) takes the loop's iterations until the agent says
//     done, which hands the work to review instead of completing it;
//   - decomposition (role agent), once every subtask has ended, is the same
//     with their outcomes in the prompt: the agent combines them and says
//     done;
//   - review (role reviewer) is one call whose verdict approves (the task
//     completes), requests changes (back to execution, with the notes in
//     its prompts) or finds the approach wrong (back to analysis).
//
// An attempt of a phase begins when the task enters it — by its first
// claim for analysis, and by each row of the table after that, the rows
// that repeat a phase included (an unusable analysis or review, an agent
// that says it is stuck). Each phase has reviewAttempts of them; a row
// into a phase with none left is not taken: the task fails saying so, in
// the phase it was in. The counts live in the task's State.
//
// Only the agent estimates progress, so analysis and review claims are
// unjudged: they leave progress and the stale counter alone. The first
// claim of an agent's attempt that runs its step restarts progress from
// its estimate (domain.Outcome.Restart), since a reviewer who sent the
// work back has said the earlier estimate was too high; the agent's
// other claims are judged as the loop's, and its done resets the stale counter
// as the loop's done would.
type review struct{}

// reviewAttempts are how many attempts each phase of a review task has
// (docs/strategies.md).
var reviewAttempts = map[string]int{
	domain.PhaseAnalysis:      3,
	domain.PhaseDecomposition: 2,
	domain.PhaseExecution:     4,
	domain.PhaseReview:        3,
}

// reviewState is what a review task keeps between claims (its State).
type reviewState struct {
	// Attempts are the attempts each phase has begun.
	Attempts map[string]int `json:"attempts"`
	// Plan is the latest analysis's plan.
	Plan string `json:"plan,omitempty"`
	// Verdict and Notes are the latest review's, shown in every prompt
	// until the next review.
	Verdict string `json:"verdict,omitempty"`
	Notes   string `json:"notes,omitempty"`
	// Work is what the agent said it did when it handed the work to
	// review: the reviewer reads it, and an approval without a summary
	// keeps it.
	Work string `json:"work,omitempty"`
	// Stuck is why the previous attempt of this phase got stuck.
	Stuck string `json:"stuck,omitempty"`
	// Fresh says the agent's attempt has not run a step yet: its first
	// one restarts progress.
	Fresh bool `json:"fresh,omitempty"`
}

// reviewStateOf reads a task's State; what cannot be read is a state
// with nothing in it.
func reviewStateOf(t domain.Task) reviewState {
	var st reviewState
	if t.State != "" {
		_ = json.Unmarshal([]byte(t.State), &st)
	}
	if st.Attempts == nil {
		st.Attempts = map[string]int{}
	}
	return st
}

// reviewTextRunes bounds each text a review task carries from claim to
// claim (plan, notes, work, why it got stuck): they are in its state and
// in every prompt of the phases that read them, so a model's long reply
// must not make every later prompt long.
const reviewTextRunes = 4000

func (st reviewState) encode() string {
	st.Plan, st.Notes = clip(st.Plan, reviewTextRunes), clip(st.Notes, reviewTextRunes)
	st.Work, st.Stuck = clip(st.Work, reviewTextRunes), clip(st.Stuck, reviewTextRunes)
	raw, err := json.Marshal(st)
	if err != nil {
		panic(err) // strings, ints and a bool: always encodes
	}
	return string(raw)
}

// reviewTurn is one claim of a review task.
type reviewTurn struct {
	*Turn
	phase string
	st    reviewState
}

func (review) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	r := &reviewTurn{Turn: t, phase: domain.ReviewPhase(t.Task.Phase), st: reviewStateOf(t.Task)}
	if r.st.Attempts[domain.PhaseAnalysis] == 0 {
		r.st.Attempts[domain.PhaseAnalysis] = 1 // the task's first claim begins its first analysis
	}
	switch r.phase {
	case domain.PhaseAnalysis:
		return r.analyse(ctx)
	case domain.PhaseExecution, domain.PhaseDecomposition:
		return r.work(ctx)
	case domain.PhaseReview:
		return r.review(ctx)
	}
	o := r.Outcome()
	o.Verdict, o.Reason = domain.VerdictStuck, fmt.Sprintf("a review task cannot go on from the phase %q", r.phase)
	return r.finish(o), nil
}

// finish records the claim's phase and state in o.
func (r *reviewTurn) finish(o domain.Outcome) domain.Outcome {
	if o.Phase == "" {
		o.Phase = r.phase
	}
	o.State = r.st.encode()
	return o
}

// enter takes the table's row from the task's phase to phase to and
// begins an attempt of to. When to has no attempt left the row is not
// taken: o fails the task, naming the phase, and the task stays where it
// was.
func (r *reviewTurn) enter(o *domain.Outcome, to string) bool {
	if _, ok := domain.ReviewTransition(r.phase, to); !ok {
		o.Verdict, o.Reason = domain.VerdictStuck, fmt.Sprintf("the review table has no move from %s to %s", r.phase, to)
		return false
	}
	if reason, ok := r.attemptLeft(to); !ok {
		o.Verdict, o.Reason, o.Phase = domain.VerdictStuck, reason, r.phase
		return false
	}
	if to != domain.PhaseDone {
		r.st.Attempts[to]++
	}
	if to != r.phase {
		r.st.Stuck = ""
	}
	r.st.Fresh = to == domain.PhaseExecution || to == domain.PhaseDecomposition
	o.Phase = to
	return true
}

// attemptLeft says whether phase has an attempt left, and when it has
// none, the task's error saying so.
func (r *reviewTurn) attemptLeft(phase string) (string, bool) {
	budget, ok := reviewAttempts[phase]
	if !ok || r.st.Attempts[phase] < budget {
		return "", true
	}
	return fmt.Sprintf("the %s phase ran out of attempts (%d of %d)", phase, r.st.Attempts[phase], budget), false
}

// notes are what every prompt of the task shows after its history: the
// plan, the latest review, why the previous attempt got stuck, and which
// attempt this is.
func (r *reviewTurn) notes() []string {
	var n []string
	if r.st.Plan != "" {
		label := "The plan from the analysis:"
		if r.phase == domain.PhaseAnalysis {
			label = "The plan of the previous analysis:"
		}
		n = append(n, label+"\n"+r.st.Plan)
	}
	if r.phase == domain.PhaseReview && r.st.Work != "" {
		n = append(n, "What the agent says it did:\n"+r.st.Work)
	}
	if r.st.Notes != "" {
		n = append(n, fmt.Sprintf("The latest review's notes (verdict %s):\n%s", r.st.Verdict, r.st.Notes))
	}
	if r.st.Stuck != "" {
		n = append(n, "The previous attempt at this phase got stuck: "+r.st.Stuck)
	}
	return append(n, fmt.Sprintf("Phase %s, attempt %d of %d.", r.phase, r.st.Attempts[r.phase], reviewAttempts[r.phase]))
}

const (
	analysisInstruction = `Decide how the work proceeds: "execute" with a plan, or "decompose" into subtasks.`
	executeInstruction  = "Choose the next action. When the goal is met, answer status done with a summary of the work: a reviewer then checks it."
	combineInstruction  = "The subtasks have ended: their outcomes are among the answers above. Combine them into what the goal asks for, then answer status done with a summary of the work: a reviewer then checks it."
	reviewInstruction   = `Review the work against the goal: "approve", "changes_requested" or "wrong_approach", with your notes.`
)

// analyse is the analysis role's claim: it decides to execute, or to
// decompose into subtasks, which it creates.
func (r *reviewTurn) analyse(ctx context.Context) (domain.Outcome, error) {
	o := r.Outcome()
	o.Step.Role, o.Unjudged = domain.RoleAnalysis, true
	resp, err := r.Ask(ctx, &o, Request{Role: domain.RoleAnalysis, System: "review_analysis_system.tmpl",
		Notes: r.notes(), Instruction: analysisInstruction, Schema: analysisSchema})
	if err != nil {
		return domain.Outcome{}, err
	}
	a, err := ParseAnalysis(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		r.Fail(&o, "", "the model's reply is not a usable analysis: "+err.Error())
		r.enter(&o, domain.PhaseAnalysis)
		return r.finish(o), nil
	}
	o.Step.Thought = a.Thought
	if a.Decision == AnalysisDecompose {
		r.decompose(ctx, &o, a)
		return r.finish(o), nil
	}
	o.Step.Action, o.Step.Success = AnalysisExecute, true
	o.Step.Result = "Plan: " + firstNonEmpty(a.Plan, "(none given)")
	if r.enter(&o, domain.PhaseExecution) {
		r.st.Plan = a.Plan
	}
	return r.finish(o), nil
}

// decompose creates the subtasks of analysis a with create_subtask, one
// call each, as one step, and moves the task to decomposition waiting on
// them. When none could be created, analysis is attempted again. A
// create_subtask that needs a person's approval (docs/security.md) stops the
// calls: the task waits for that approval, and the subtasks after it are
// left to the agent of the decomposition.
func (r *reviewTurn) decompose(ctx context.Context, o *domain.Outcome, a AnalysisReply) {
	if reason, ok := r.attemptLeft(domain.PhaseDecomposition); !ok {
		o.Step.Action, o.Step.Success, o.Step.Result = AnalysisDecompose, true, "Subtasks: "+subtaskGoals(a.Subtasks)
		o.Verdict, o.Reason = domain.VerdictStuck, reason
		return
	}
	var lines []string
	created := 0
	for _, s := range a.Subtasks {
		params, err := json.Marshal(s)
		if err != nil {
			panic(err) // two strings: always encodes
		}
		ok := r.Act(ctx, o, "create_subtask", params)
		if o.Wait == domain.WaitApproval {
			r.enter(o, domain.PhaseDecomposition)
			r.st.Plan = a.Plan
			return
		}
		if ok {
			created++
			lines = append(lines, o.Step.Result)
		} else {
			lines = append(lines, fmt.Sprintf("subtask %q not created: %s", s.Goal, o.Step.Error))
		}
	}
	raw, err := json.Marshal(map[string]any{"subtasks": a.Subtasks})
	if err != nil {
		panic(err)
	}
	o.Step.Action, o.Step.Params, o.Step.Result = "create_subtask", raw, strings.Join(lines, "\n")
	if created == 0 {
		o.Step.Success, o.Step.Error = false, "none of the subtasks could be created"
		r.enter(o, domain.PhaseAnalysis)
		return
	}
	o.Step.Success, o.Step.Error = true, ""
	o.Progress, o.Verdict, o.Wait = r.Task.Progress, domain.VerdictContinue, domain.WaitSubtasks
	r.enter(o, domain.PhaseDecomposition)
	r.st.Plan = a.Plan
}

// work is the agent's claim in execution or decomposition: the loop's
// decision and its tool, except that done hands the work to review and
// stuck begins another attempt of the phase.
func (r *reviewTurn) work(ctx context.Context) (domain.Outcome, error) {
	o := r.Outcome()
	o.Step.Role = domain.RoleAgent
	instruction := executeInstruction
	if r.phase == domain.PhaseDecomposition {
		instruction = combineInstruction
	}
	resp, err := r.Ask(ctx, &o, Request{Role: domain.RoleAgent, Notes: r.notes(), Instruction: instruction, Schema: DecisionSchema})
	if err != nil {
		return domain.Outcome{}, err
	}
	d, err := ParseDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		r.Fail(&o, "", "the model's reply is not a usable decision: "+err.Error())
		return r.finish(o), nil
	}
	r.Decide(ctx, &o, d)
	switch o.Verdict {
	case domain.VerdictDone:
		o.Verdict, o.Summary = domain.VerdictContinue, ""
		o.Progress, o.Restart = max(o.Progress, r.Task.Progress), true
		if r.enter(&o, domain.PhaseReview) {
			r.st.Work = d.Summary
		}
	case domain.VerdictStuck:
		reason := o.Reason
		o.Verdict, o.Reason, o.Unjudged = domain.VerdictContinue, "", true
		if r.enter(&o, r.phase) {
			r.st.Stuck = firstNonEmpty(reason, "no reason given")
		}
	default:
		if r.st.Fresh && (o.Step.Success || o.Wait == domain.WaitApproval) {
			o.Restart, r.st.Fresh = true, false
		}
	}
	return r.finish(o), nil
}

// review is the reviewer's claim: one verdict on the work.
func (r *reviewTurn) review(ctx context.Context) (domain.Outcome, error) {
	o := r.Outcome()
	o.Step.Role, o.Unjudged = domain.RoleReviewer, true
	resp, err := r.Ask(ctx, &o, Request{Role: domain.RoleReviewer, System: "review_reviewer_system.tmpl", Tools: []Tool{},
		Notes: r.notes(), Instruction: reviewInstruction, Schema: reviewSchema})
	if err != nil {
		return domain.Outcome{}, err
	}
	v, err := ParseReview(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		r.Fail(&o, "", "the model's reply is not a usable review: "+err.Error())
		r.enter(&o, domain.PhaseReview)
		return r.finish(o), nil
	}
	o.Step.Thought, o.Step.Action, o.Step.Success = v.Thought, v.Verdict, true
	o.Step.Result = firstNonEmpty(v.Notes, v.Summary, v.Verdict)
	switch v.Verdict {
	case ReviewApprove:
		if r.enter(&o, domain.PhaseDone) {
			o.Verdict, o.Summary = domain.VerdictDone, firstNonEmpty(v.Summary, r.st.Work, v.Notes, "The reviewer approved the work.")
		}
	case ReviewChangesRequested:
		if r.enter(&o, domain.PhaseExecution) {
			r.st.Verdict, r.st.Notes = v.Verdict, v.Notes
		}
	case ReviewWrongApproach:
		if r.enter(&o, domain.PhaseAnalysis) {
			r.st.Verdict, r.st.Notes = v.Verdict, v.Notes
		}
	}
	return r.finish(o), nil
}

// The decisions of an analysis (docs/strategies.md).
const (
	AnalysisExecute   = "execute"
	AnalysisDecompose = "decompose"
)

// AnalysisReply is the analysis role's reply (docs/strategies.md).
type AnalysisReply struct {
	Thought  string
	Decision string // AnalysisExecute or AnalysisDecompose
	Plan     string
	// Subtasks are the parts a decomposition creates, at least one.
	Subtasks []SubtaskPlan
}

// SubtaskPlan is one subtask an analysis decomposes into:
// create_subtask's parameters.
type SubtaskPlan struct {
	Goal string `json:"goal"`
	Name string `json:"name,omitempty"`
}

// ErrBadAnalysis marks an analysis role's reply that is not usable.
var ErrBadAnalysis = errors.New("unusable analysis")

// ParseAnalysis reads an analysis role's reply as ParseDecision reads
// the loop's: a JSON object as is, fenced, or embedded in prose. decision is
// execute or decompose in any case ("execution" and "decomposition" too);
// plan is a string or a list of steps; subtasks are objects {goal, name?}
// or goals alone, and a decomposition needs one with a goal. It never
// panics; anything unusable is an ErrBadAnalysis saying why.
func ParseAnalysis(text string) (AnalysisReply, error) {
	var raw struct {
		Thought  string          `json:"thought"`
		Decision string          `json:"decision"`
		Plan     json.RawMessage `json:"plan"`
		Subtasks json.RawMessage `json:"subtasks"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return AnalysisReply{}, fmt.Errorf("%w: %v", ErrBadAnalysis, err)
	}
	a := AnalysisReply{Thought: strings.TrimSpace(raw.Thought)}
	switch strings.ToLower(strings.TrimSpace(raw.Decision)) {
	case AnalysisExecute, "execution":
		a.Decision = AnalysisExecute
	case AnalysisDecompose, "decomposition":
		a.Decision = AnalysisDecompose
	case "":
		return AnalysisReply{}, fmt.Errorf(`%w: it has no decision ("execute" or "decompose")`, ErrBadAnalysis)
	default:
		return AnalysisReply{}, fmt.Errorf(`%w: decision %q is not "execute" or "decompose"`, ErrBadAnalysis, raw.Decision)
	}
	plan, err := replyText(raw.Plan)
	if err != nil {
		return AnalysisReply{}, fmt.Errorf("%w: plan: %v", ErrBadAnalysis, err)
	}
	a.Plan = plan
	if a.Decision == AnalysisExecute {
		return a, nil
	}
	if a.Subtasks, err = subtaskPlans(raw.Subtasks); err != nil {
		return AnalysisReply{}, fmt.Errorf("%w: subtasks: %v", ErrBadAnalysis, err)
	}
	if len(a.Subtasks) == 0 {
		return AnalysisReply{}, fmt.Errorf("%w: it decides to decompose but names no subtask", ErrBadAnalysis)
	}
	return a, nil
}

// replyText reads a string, or a list of strings as lines; "" when absent.
func replyText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.TrimSpace(one), nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return "", errors.New("not a string or a list of strings")
	}
	var lines []string
	for _, s := range many {
		if s = strings.TrimSpace(s); s != "" {
			lines = append(lines, s)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// subtaskPlans reads a list of subtasks, each {goal, name?} or a goal
// alone; those without a goal are dropped.
func subtaskPlans(raw json.RawMessage) ([]SubtaskPlan, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("not a list")
	}
	var out []SubtaskPlan
	for _, it := range items {
		var s SubtaskPlan
		if json.Unmarshal(it, &s.Goal) != nil {
			if err := json.Unmarshal(it, &s); err != nil {
				return nil, errors.New(`each is an object {"goal", "name"} or a goal`)
			}
		}
		s.Goal, s.Name = strings.TrimSpace(s.Goal), strings.TrimSpace(s.Name)
		if s.Goal != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func subtaskGoals(ss []SubtaskPlan) string {
	goals := make([]string, len(ss))
	for i, s := range ss {
		goals[i] = fmt.Sprintf("%q", s.Goal)
	}
	return strings.Join(goals, ", ")
}

// The verdicts of a review (docs/strategies.md).
const (
	ReviewApprove          = "approve"
	ReviewChangesRequested = "changes_requested"
	ReviewWrongApproach    = "wrong_approach"
)

// ReviewReply is the reviewer role's reply (docs/strategies.md).
type ReviewReply struct {
	Thought string
	Verdict string // ReviewApprove, ReviewChangesRequested or ReviewWrongApproach
	// Notes say what to change or why the approach is wrong; a reply
	// that sends the work back without notes gives its thought.
	Notes   string
	Summary string
}

// ErrBadReview marks a reviewer's reply that is not usable.
var ErrBadReview = errors.New("unusable review")

// ParseReview reads a reviewer's reply as ParseDecision reads the loop's: a
// JSON object as is, fenced, or embedded in prose. The verdict is read
// in any case, with spaces or hyphens for underscores, and "approved",
// "request_changes" and "changes" as synonyms. It never panics; anything
// unusable is an ErrBadReview saying why.
func ParseReview(text string) (ReviewReply, error) {
	var raw struct {
		Thought string          `json:"thought"`
		Verdict string          `json:"verdict"`
		Notes   json.RawMessage `json:"notes"`
		Summary string          `json:"summary"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return ReviewReply{}, fmt.Errorf("%w: %v", ErrBadReview, err)
	}
	v := ReviewReply{Thought: strings.TrimSpace(raw.Thought), Summary: strings.TrimSpace(raw.Summary)}
	verdict := strings.NewReplacer(" ", "_", "-", "_").Replace(strings.ToLower(strings.TrimSpace(raw.Verdict)))
	switch verdict {
	case ReviewApprove, "approved":
		v.Verdict = ReviewApprove
	case ReviewChangesRequested, "request_changes", "changes":
		v.Verdict = ReviewChangesRequested
	case ReviewWrongApproach:
		v.Verdict = ReviewWrongApproach
	case "":
		return ReviewReply{}, fmt.Errorf(`%w: it has no verdict ("approve", "changes_requested" or "wrong_approach")`, ErrBadReview)
	default:
		return ReviewReply{}, fmt.Errorf(`%w: verdict %q is not "approve", "changes_requested" or "wrong_approach"`, ErrBadReview, raw.Verdict)
	}
	notes, err := replyText(raw.Notes)
	if err != nil {
		return ReviewReply{}, fmt.Errorf("%w: notes: %v", ErrBadReview, err)
	}
	v.Notes = notes
	if v.Verdict != ReviewApprove {
		v.Notes = firstNonEmpty(v.Notes, v.Thought)
	}
	return v, nil
}

// analysisSchema and reviewSchema are the JSON Schemas of the analysis
// role's and the reviewer's replies (structured output).
var (
	analysisSchema = &plugin.JSONSchema{
		Name: "review_analysis",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,` +
			`"required":["thought","decision","plan","subtasks"],` +
			`"properties":{` +
			`"thought":{"type":"string","description":"one or two sentences of reasoning"},` +
			`"decision":{"type":"string","enum":["execute","decompose"]},` +
			`"plan":{"type":"string","description":"the steps the work will take"},` +
			`"subtasks":{"type":"array","description":"when decompose: the independent parts, each worked as a task of its own; else empty",` +
			`"items":{"type":"object","additionalProperties":false,"required":["goal","name"],` +
			`"properties":{"goal":{"type":"string"},"name":{"type":"string","description":"a short name"}}}}}}`),
	}
	reviewSchema = &plugin.JSONSchema{
		Name: "review_verdict",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,` +
			`"required":["thought","verdict","notes","summary"],` +
			`"properties":{` +
			`"thought":{"type":"string","description":"one or two sentences of reasoning"},` +
			`"verdict":{"type":"string","enum":["approve","changes_requested","wrong_approach"]},` +
			`"notes":{"type":"string","description":"what to change, or why the approach is wrong"},` +
			`"summary":{"type":"string","description":"when approving: what was achieved"}}}`),
	}
)
