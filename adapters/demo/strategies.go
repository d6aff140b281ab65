package demo

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// answer is the demo model's reply to a task's claim, in the shape its
// strategy's role asks for (docs/strategies.md): the same rehearsal plan, walked
// through thoughts and observations (react), native tool calls (tools),
// an analysis and a review (review), or a supervisor routing its agents.
func answer(task plugin.TaskRef, tools []plugin.ToolSpec, post, canRun bool) (text string, calls []plugin.ToolCall) {
	p := plan{task: task, n: PlanLength(task.Goal), post: post}
	if task.Strategy == "" || task.Strategy == domain.StrategyLoop || task.Strategy == domain.StrategyTools {
		// The loop and native tool calling show a person's part; the
		// other strategies keep to the rehearsal plan.
		p = p.withAsks(canRun)
	}
	switch {
	case task.Strategy == domain.StrategyTools || len(tools) > 0:
		return p.toolCalls(task.Iteration)
	case task.Role == domain.RoleThought, task.Role == domain.RoleAction, task.Role == domain.RoleObservation:
		return p.react(task), nil
	case task.Role == domain.RoleAnalysis:
		return encode(map[string]any{"thought": "(demo model) The goal is small enough to do in one go.",
			"decision": "execute", "plan": "Follow the rehearsal plan in " + PlanFile + "."}), nil
	case task.Role == domain.RoleReviewer && task.Strategy == domain.StrategyReview:
		return encode(map[string]any{"thought": "(demo model) The plan was written and read back.",
			"verdict": "approve", "notes": "The rehearsal plan is complete.", "summary": p.finalSummary()}), nil
	case task.Role == domain.RoleSupervisor:
		return p.supervise(task), nil
	case task.Role != "" && task.Role != domain.RoleAgent:
		// An agent of a multi-agent strategy: the plan's step, with a tool
		// every built-in agent has where the plan's needs another.
		d := plan{task: p.agentTurn(task), n: p.n, post: p.post}.decide()
		if d.Action == "post_message" {
			d.Action, d.Params = "list_files", map[string]string{}
		}
		return encode(d), nil
	case task.Strategy == domain.StrategyReview:
		// Execution follows the one analysis claim.
		t := task
		t.Iteration = max(task.Iteration-1, 1)
		return encode(plan{task: t, n: p.n, post: p.post}.decide()), nil
	}
	return encode(p.decide()), nil
}

// react answers a ReAct claim: cycle c of the plan is its step c.
func (p plan) react(task plugin.TaskRef) string {
	c := min((max(task.Iteration, 1)-1)/3+1, p.n)
	mv := p.move(c)
	switch task.Role {
	case domain.RoleThought:
		return encode(map[string]any{"thought": "(demo model) " + mv.thought})
	case domain.RoleAction:
		if c == p.n || mv.action == "none" {
			return encode(map[string]any{"final_answer": p.finalSummary()})
		}
		return encode(map[string]any{"action": mv.action, "params": p.params(mv)})
	}
	return encode(map[string]any{"observation": "(demo model) " + mv.did, "progress": min(100*c/p.n, 99), "status": "continue"})
}

// toolCalls answers a native tool-calling claim: the plan's tool and a
// report of the progress, or, at the plan's end, the final answer.
func (p plan) toolCalls(iteration int) (string, []plugin.ToolCall) {
	i := min(max(iteration, 1), p.n)
	mv := p.move(i)
	if i == p.n || mv.action == "none" {
		return p.finalSummary(), nil
	}
	return "", []plugin.ToolCall{
		{ID: fmt.Sprintf("call_%d_1", i), Name: mv.action, Arguments: encode(p.params(mv))},
		{ID: fmt.Sprintf("call_%d_2", i), Name: "report_progress", Arguments: encode(map[string]any{"progress": 100 * i / p.n, "note": mv.did})},
	}
}

// supervise routes the plan's steps: odd steps to the researcher, even
// ones to the writer (so a magentic ledger sees no stall), and DONE once
// the plan is through. Supervisor and agent claims alternate.
func (p plan) supervise(task plugin.TaskRef) string {
	step := (max(task.Iteration, 1)-1)/2 + 1
	if step >= p.n {
		return encode(map[string]any{"thought": "(demo model) Every step of the plan is done.", "next": "DONE",
			"instruction": "", "summary": p.finalSummary(), "plan": "Done."})
	}
	next := "researcher"
	if step%2 == 0 {
		next = "writer"
	}
	mv := p.move(step)
	return encode(map[string]any{"thought": "(demo model) " + mv.thought, "next": next, "instruction": mv.todo,
		"facts": []string{fmt.Sprintf("step %d of %d", step, p.n)}, "plan": "Follow the rehearsal plan."})
}

// agentTurn is the plan step an agent's claim takes: in a supervised
// task every other claim is an agent's; in a group chat every claim is.
func (p plan) agentTurn(task plugin.TaskRef) plugin.TaskRef {
	t := task
	if task.Strategy == domain.StrategySupervisor || task.Strategy == domain.StrategyMagentic {
		t.Iteration = max(task.Iteration/2, 1)
		if t.Iteration >= p.n {
			t.Iteration = p.n - 1 // the supervisor ends the task, not an agent
		}
	}
	return t
}

// params are a move's tool parameters, with the plan file's content for
// write_file, as Decide gives them.
func (p plan) params(mv move) map[string]string {
	params := maps.Clone(mv.params)
	if params == nil {
		params = map[string]string{}
	}
	if mv.action == "write_file" {
		params["content"] = p.file()
	}
	return params
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}" // maps of strings and numbers always encode
	}
	return string(b)
}
