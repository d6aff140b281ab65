package tasks

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/domain"
)

// groupChat is ElGraph's group chat (docs/strategies.md): the agents speak in
// turn — each turn one agent's step, with the shared transcript — for
// the team's rounds (every agent once a round). A turn whose decision
// says status "done" ends the task completed, its summary the task's.
// When the rounds end without one, the task ends in stalemate.
//
// Who speaks is round robin, or with TeamOptions.Speaker SpeakerModel
// (TASKLOOM_GROUP_CHAT_SPEAKER=model) the model's choice: a claim in the
// supervisor's role picks the next speaker (its reply is the
// supervisor's; DONE ends the chat too), then that speaker's turn.
//
// The task's Phase is whose turn it is (an agent's name, or "supervisor"
// for the choice) and its State counts the turns.
type groupChat struct{}

func (groupChat) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	tt := newTeamTurn(t)
	tm := tt.team
	a, ok := tm.agent(t.Task.Phase)
	if tm.Speaker == SpeakerModel {
		if !ok {
			return tt.chooseSpeaker(ctx)
		}
		return tt.speak(ctx, a, domain.RoleSupervisor)
	}
	if !ok {
		a = tm.agents[tt.state.Turns%len(tm.agents)]
	}
	next := tm.agents[(tm.index(a.Name)+1)%len(tm.agents)]
	return tt.speak(ctx, a, next.Name)
}

// speak is agent a's turn; next is the phase after it.
func (tt *teamTurn) speak(ctx context.Context, a Agent, next string) (domain.Outcome, error) {
	st := tt.state
	n := len(tt.team.agents)
	total := tt.team.Rounds * n
	note := fmt.Sprintf("This is a group chat of the agents %s, in rounds in which each speaks once: round %d of %d, turn %d of %d. It is your turn, %s.",
		joinNames(tt.team.names()), st.Turns/n+1, tt.team.Rounds, st.Turns+1, total, a.Name)
	if st.Instruction != "" {
		note += "\nYou were chosen to speak with: " + st.Instruction
	}
	instruction := fmt.Sprintf("Take your turn as %s: one action with one of your tools, or status \"done\" with a summary when the goal is met, which ends the chat.", a.Name)
	o, d, err := tt.agentStep(ctx, a, note, instruction)
	if err != nil {
		return domain.Outcome{}, err
	}
	switch o.Verdict {
	case domain.VerdictDone:
		o.Summary = firstNonEmpty(d.Summary, d.Thought)
	case domain.VerdictStuck:
		reportBack(&o, d) // one agent stuck is not the chat's end
	}
	st.Turns++
	st.Instruction = ""
	o.Phase, o.State = next, st.encode()
	if st.Turns >= total && o.Verdict == domain.VerdictContinue {
		rounds := fmt.Sprintf("%d rounds", tt.team.Rounds)
		if tt.team.Rounds == 1 {
			rounds = "one round"
		}
		o.Stalemate = "the group chat's " + rounds + " ended without an agent saying the goal is met"
	}
	return o, nil
}

// chooseSpeaker is the model's choice of who speaks next, in the
// supervisor's role. It estimates no progress; a reply that is not a
// decision, or names no agent, is a failed step without progress.
func (tt *teamTurn) chooseSpeaker(ctx context.Context) (domain.Outcome, error) {
	o := tt.Outcome()
	o.Step.Role, o.Unjudged = domain.RoleSupervisor, true
	st := tt.state
	n := len(tt.team.agents)
	note := fmt.Sprintf("Turn %d of %d (round %d of %d).", st.Turns+1, tt.team.Rounds*n, st.Turns/n+1, tt.team.Rounds)
	resp, err := tt.ask(ctx, &o, Request{Role: domain.RoleSupervisor, Tools: []Tool{}, History: &SupervisorHistory, Notes: tt.notes(SupervisorHistory, note),
		Instruction: "Choose the agent that speaks next and say what you expect of it, or answer DONE with a summary when the goal is met.",
		Schema:      supervisorSchema(tt.team, false)},
		"group_chat_speaker.tmpl", map[string]any{"Agents": tt.team.views()})
	if err != nil {
		return domain.Outcome{}, err
	}
	o.Phase, o.State = domain.RoleSupervisor, st.encode()
	d, err := ParseSupervisorDecision(resp.Text)
	if err != nil {
		o.Unjudged, o.Step.Result = false, clip(resp.Text, 2000)
		tt.Fail(&o, "", "the reply choosing the next speaker is not a usable decision: "+err.Error())
		return o, nil
	}
	o.Step.Thought, o.Step.Params = d.Thought, instructionParams(d.Instruction)
	if d.Next == NextDone {
		o.Step.Action, o.Step.Success, o.Step.Result = NextDone, true, "the goal is met"
		o.Verdict, o.Summary = domain.VerdictDone, firstNonEmpty(d.Summary, d.Instruction, d.Thought)
		return o, nil
	}
	a, ok := tt.team.agent(d.Next)
	if !ok {
		o.Unjudged = false
		tt.Fail(&o, d.Next, fmt.Sprintf("the next speaker chosen, %q, is not one of the agents; %s", d.Next, tt.team.listed()))
		return o, nil
	}
	o.Step.Action, o.Step.Success = a.Name, true
	st.Instruction = d.Instruction
	o.Phase, o.State = a.Name, st.encode()
	return o, nil
}

// joinNames lists names as a sentence does: a, b and c.
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}
