package render_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
)

// A notification flush renders one message for a room and splits it to the
// platform's limit before sending.
func ExampleProgress() {
	task := domain.Task{Number: 1, Name: "Build auth feature", Status: domain.StatusRunning, Progress: 35, Iteration: 4}
	last := domain.Step{Action: "write_file", Params: json.RawMessage(`{"path":"src/auth/login.ts"}`), Success: true}
	msg := render.Progress(render.Discord, []render.Update{{Task: task, From: 15, LastAction: &last}})
	for _, chunk := range render.Split(msg, render.DiscordLimit) {
		fmt.Println(chunk)
	}
	// Output:
	// 📋 Task #1 "Build auth feature"
	//    Progress: 15% → 35%
	//    Last action: `write_file src/auth/login.ts` ✓
	//    Iteration: 4
}

func ExampleEscape() {
	name := "@everyone look: <@123> *now*"
	show := func(s string) string { return strings.ReplaceAll(s, "\u200b", "{ZWSP}") }
	fmt.Println(show(render.Escape(render.Plain, name)))
	fmt.Println(show(render.Escape(render.Discord, name)))
	fmt.Println(show(render.Escape(render.Slack, name)))
	// Output:
	// @everyone look: <@123> *now*
	// @{ZWSP}everyone look: <{ZWSP}@123\> \*now\*
	// @{ZWSP}everyone look: &lt;@123&gt; ∗now∗
}

func ExampleSplit() {
	for _, chunk := range render.Split("first line\nsecond line with 🇫🇷 flag", 16) {
		fmt.Printf("%q\n", chunk)
	}
	// Output:
	// "first line"
	// "second line "
	// "with 🇫🇷 flag"
}
