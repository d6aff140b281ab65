package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// botMessage is a message the bot posted in a room, as the fake keeps it.
type botMessage struct {
	text    string
	at      time.Time
	replyTo string // Discord: the message it answers
	user    string // Slack: whom an ephemeral message is shown to
}

// roomMessages is what the bot posted in a room, in order; ephemeral
// messages are left out on Discord and kept (marked with user) on Slack.
func (s *soak) roomMessages(platform, room string) []botMessage {
	var out []botMessage
	if platform == "discord" {
		bot := s.discord.BotUser().ID
		for _, m := range s.discord.Messages(room) {
			if m.Author.ID == bot && !m.Deleted && !m.Ephemeral() {
				out = append(out, botMessage{text: m.Content, at: m.Created, replyTo: m.ReplyTo})
			}
		}
		return out
	}
	for _, m := range s.slack.Messages() {
		if m.Channel != room || m.Deleted {
			continue
		}
		bm := botMessage{text: m.Text, at: m.Time}
		if m.Kind == "ephemeral" {
			bm.user = m.User
		}
		out = append(out, bm)
	}
	return out
}

// messageCount is how many messages the bot posted in all the rooms.
func (s *soak) messageCount() int {
	n := 0
	for _, r := range discordRooms {
		n += len(s.roomMessages("discord", r))
	}
	for _, r := range slackRooms {
		n += len(s.roomMessages("slack", r))
	}
	return n
}

// item is one thing a room was told about a task.
type item struct {
	kind     string // ack, progress, terminal, question, approval, post
	task     int64
	from, to int // progress
	block    string
	at       time.Time
	msg      int // the message's index in the room
}

var (
	ackRE      = regexp.MustCompile(`Created task #(\d+)`)
	blockRE    = regexp.MustCompile(`^(📋|✅|❌|⚠️|🛑|❓|🔐|💬) Task #(\d+)\b`)
	progressRE = regexp.MustCompile(`^\s+Progress: (\d+)% → (\d+)%`)
)

// parse reads the items of a room's messages. A status reply (a task in
// detail, with its goal) is no notification and is left out.
func parse(msgs []botMessage) []item {
	var out []item
	for i, m := range msgs {
		if m.user != "" || strings.Contains(m.text, "\n   Goal: ") {
			continue
		}
		for _, a := range ackRE.FindAllStringSubmatch(m.text, -1) {
			n, _ := strconv.ParseInt(a[1], 10, 64)
			out = append(out, item{kind: "ack", task: n, at: m.at, msg: i})
		}
		var cur *item
		flush := func() {
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		}
		for line := range strings.SplitSeq(m.text, "\n") {
			if b := blockRE.FindStringSubmatch(line); b != nil {
				flush()
				n, _ := strconv.ParseInt(b[2], 10, 64)
				kind := map[string]string{"📋": "progress", "✅": "terminal", "❌": "terminal", "⚠️": "terminal", "🛑": "terminal",
					"❓": "question", "🔐": "approval", "💬": "post"}[b[1]]
				cur = &item{kind: kind, task: n, from: -1, to: -1, at: m.at, msg: i, block: line}
				continue
			}
			if cur == nil {
				continue
			}
			if line == "" {
				flush()
				continue
			}
			cur.block += "\n" + line
			if p := progressRE.FindStringSubmatch(line); p != nil && cur.kind == "progress" {
				cur.from, _ = strconv.Atoi(p[1])
				cur.to, _ = strconv.Atoi(p[2])
			}
		}
		flush()
	}
	return out
}

// violation is one broken invariant.
type violation struct {
	kind string // lost, duplicated, out_of_order, other
	what string
	at   time.Time
}

// dbTask is a task as the store has it.
type dbTask struct {
	number   int64
	goal     string
	status   string
	platform string
	room     string
	parent   bool
	schedule bool
	lease    string
	ended    time.Time
}

var terminal = []string{"completed", "failed", "stalemate", "canceled"}

// check checks the invariants and prints the run's line; it fails the
// test on any violation.
func (s *soak) check(settled bool) {
	ctx := context.Background()
	var vs []violation
	add := func(kind string, at time.Time, format string, args ...any) {
		vs = append(vs, violation{kind, fmt.Sprintf(format, args...), at})
	}
	if !settled {
		add("other", time.Now(), "the service did not settle after the faults' end: nothing delivered for %s, or still busy after %s", settleLimit, settleMax)
	}
	rows, err := s.db.Query(ctx, `SELECT number, goal, status, platform, room_id, parent_number IS NOT NULL, schedule_id IS NOT NULL, lease_owner, COALESCE(completed_at, now()) FROM tasks ORDER BY number`)
	if err != nil {
		s.t.Fatalf("read the tasks: %v", err)
	}
	var tasks []dbTask
	for rows.Next() {
		var t dbTask
		if err := rows.Scan(&t.number, &t.goal, &t.status, &t.platform, &t.room, &t.parent, &t.schedule, &t.lease, &t.ended); err != nil {
			s.t.Fatal(err)
		}
		tasks = append(tasks, t)
	}
	rows.Close()
	byNumber := map[int64]dbTask{}
	made := map[string][]int64{}
	for _, t := range tasks {
		byNumber[t.number] = t
		if !t.parent && !t.schedule {
			made[t.goal] = append(made[t.goal], t.number)
		}
	}

	// Each command made its task exactly once — a replica killed soon
	// after it took the command included (noted with the loss, see
	// killedAfter).
	refused := 0
	for _, c := range s.commands {
		goal := "soak " + c.kind + " " + c.id
		switch n := len(made[goal]); {
		case n > 1:
			add("duplicated", c.at, "%s command %q made %d tasks %v", c.platform, goal, n, made[goal])
		case n == 0 && !c.ambiguous:
			if s.refused(c) {
				refused++
				continue
			}
			add("lost", c.at, "%s command %q in %s made no task%s", c.platform, goal, c.room, s.killedAfter(c))
		}
	}

	// Every task ended, or waits on a person who did not answer.
	var failedTasks []string
	for _, t := range tasks {
		if slices.Contains(terminal, t.status) {
			if t.status != "completed" {
				failedTasks = append(failedTasks, fmt.Sprintf("#%d %s", t.number, t.status))
			}
			continue
		}
		c := s.byGoal(t.goal)
		if t.status == "waiting" && c != nil && c.leave && !t.parent && !t.schedule {
			continue
		}
		add("other", t.ended, "task #%d %q is %s at the end", t.number, t.goal, t.status)
	}

	// No lease left to a replica: every task ended or waiting, none
	// holds one.
	for _, t := range tasks {
		if t.lease != "" {
			add("other", time.Now(), "task #%d (%s) still leased to %q after the service settled", t.number, t.status, t.lease)
		}
	}
	var claimed int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE claimed_by <> '' AND status = 'pending'`).Scan(&claimed); err == nil && claimed > 0 {
		add("other", time.Now(), "%d notifications still claimed after the service settled", claimed)
	}
	var dead int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE status = 'failed'`).Scan(&dead); err == nil && dead > 0 {
		add("lost", time.Now(), "%d notifications are dead letters", dead)
	}

	// No schedule ran twice for one due time: no more runs than due
	// times passed since it was made.
	srows, err := s.db.Query(ctx, `SELECT s.id, s.created_at,
		(SELECT count(*) FROM schedule_events e WHERE e.schedule_id = s.id AND e.type IN ('fired', 'caught_up', 'skipped', 'missed')),
		(SELECT count(*) FROM tasks t WHERE t.schedule_id = s.id),
		(SELECT COALESCE(max(e.time), s.created_at) FROM schedule_events e WHERE e.schedule_id = s.id)
		FROM schedules s`)
	if err != nil {
		s.t.Fatalf("read the schedules: %v", err)
	}
	schedRuns := 0
	for srows.Next() {
		var id, decisions, runs int64
		var created, last time.Time
		if err := srows.Scan(&id, &created, &decisions, &runs, &last); err != nil {
			s.t.Fatal(err)
		}
		dues := int64(last.Sub(created)/(10*time.Second)) + 1
		if decisions > dues || runs > dues {
			add("duplicated", last, "schedule %d: %d decisions and %d runs for %d due times", id, decisions, runs, dues)
		}
		schedRuns += int(runs)
	}
	srows.Close()

	// Each room got each task's messages in order, none twice, none lost.
	type roomKey struct{ platform, room string }
	items := map[roomKey][]item{}
	messages := 0
	for _, r := range discordRooms {
		msgs := s.roomMessages("discord", r)
		messages += len(msgs)
		items[roomKey{"discord", r}] = parse(msgs)
	}
	for _, r := range slackRooms {
		msgs := s.roomMessages("slack", r)
		messages += len(msgs)
		items[roomKey{"slack", r}] = parse(msgs)
	}
	lost, duplicated, outOfOrder := 0, 0, 0
	kinds := map[string]int{}
	roomed := 0
	for k, its := range items {
		for _, it := range its {
			kinds[it.kind]++
		}
		type seen struct {
			terminal, question, approval, ack int
			lastTo                            int
			ended                             bool
			blocks                            map[string]bool
		}
		per := map[int64]*seen{}
		for _, it := range its {
			st := per[it.task]
			if st == nil {
				st = &seen{lastTo: -1, blocks: map[string]bool{}}
				per[it.task] = st
			}
			where := fmt.Sprintf("%s %s task #%d", k.platform, k.room, it.task)
			if it.kind != "ack" && st.blocks[it.block] {
				add("duplicated", it.at, "%s: the same message twice: %q", where, it.block)
			}
			st.blocks[it.block] = true
			if st.ended && it.kind != "ack" {
				add("out_of_order", it.at, "%s: %s after the terminal message: %q", where, it.kind, it.block)
			}
			switch it.kind {
			case "ack":
				st.ack++
				if st.ack == 2 {
					add("duplicated", it.at, "%s: acknowledged twice", where)
				}
			case "terminal":
				st.terminal++
				st.ended = true
				if st.terminal == 2 {
					add("duplicated", it.at, "%s: terminal message twice", where)
				}
			case "question":
				st.question++
				if st.question == 2 {
					add("duplicated", it.at, "%s: question twice", where)
				}
			case "approval":
				st.approval++
				if st.approval == 2 {
					add("duplicated", it.at, "%s: approval request twice", where)
				}
			case "progress":
				if it.from >= 0 && st.lastTo >= 0 && it.from != st.lastTo {
					add("lost", it.at, "%s: progress shown from %d%%, but the room was last shown %d%%: %q", where, it.from, st.lastTo, it.block)
				}
				if it.to >= 0 {
					if it.to < st.lastTo {
						add("out_of_order", it.at, "%s: progress back from %d%% to %d%%: %q", where, st.lastTo, it.to, it.block)
					}
					st.lastTo = it.to
				}
			}
		}
		// None lost: each task of this room has its terminal message (or
		// its question or request, when it waits), and a task made by a
		// command here its acknowledgement.
		for _, t := range tasks {
			if t.platform != k.platform || channelOf(t.room) != k.room {
				continue
			}
			roomed++
			st := per[t.number]
			if st == nil {
				st = &seen{}
			}
			where := fmt.Sprintf("%s %s task #%d %q (%s)", k.platform, k.room, t.number, t.goal, t.status)
			switch {
			case slices.Contains(terminal, t.status) && st.terminal == 0:
				add("lost", t.ended, "%s: no terminal message (ended at %.3fs)", where, t.ended.Sub(s.log.start).Seconds())
			case t.status == "waiting" && strings.HasPrefix(t.goal, "soak ask ") && st.question == 0:
				add("lost", time.Now(), "%s: its question never shown", where)
			case t.status == "waiting" && strings.HasPrefix(t.goal, "soak approve ") && st.approval == 0:
				add("lost", time.Now(), "%s: its approval request never shown", where)
			}
			if c := s.byGoal(t.goal); c != nil && !t.parent && !t.schedule && c.platform == k.platform && st.ack == 0 {
				// A reply is in the outbox before its send: one whose
				// replica was killed while sending it is sent by
				// another, so a kill explains no loss (it is named to
				// help read the violation).
				add("lost", c.at, "%s: never acknowledged (asked at %.3fs)%s", where, c.at.Sub(s.log.start).Seconds(), s.killedAfter(c))
			}
		}
	}
	for _, v := range vs {
		switch v.kind {
		case "lost":
			lost++
		case "duplicated":
			duplicated++
		case "out_of_order":
			outOfOrder++
		}
	}

	// taskloom check, on the store as the replicas left it.
	cmd := exec.Command(s.bin, "check")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + s.directDB, "HOME=" + s.t.TempDir(), "TASKLOOM_LOG_LEVEL=warn"}
	if out, err := cmd.CombinedOutput(); err != nil {
		add("other", time.Now(), "taskloom check: %v\n%s", err, out)
	}

	dErrs, sErrs := 0, 0
	for _, c := range s.discord.Calls() {
		if c.Status >= 400 {
			dErrs++
		}
	}
	for _, c := range s.slack.Calls() {
		if c.Status >= 400 || c.Error != "" {
			sErrs++
		}
	}
	if len(failedTasks) > 0 {
		fmt.Printf("soak: tasks that did not complete: %s\n", strings.Join(failedTasks, ", "))
	}
	if refused > 0 {
		fmt.Printf("soak: %d commands refused during a database outage (told so, no task)\n", refused)
	}
	fmt.Printf("soak: checked %d tasks in %d rooms: %s\n", roomed, len(items), jsonString(kinds))
	var per []string
	for _, r := range discordRooms {
		per = append(per, fmt.Sprintf("discord %s=%d", r, len(s.roomMessages("discord", r))))
	}
	for _, r := range slackRooms {
		per = append(per, fmt.Sprintf("slack %s=%d", r, len(s.roomMessages("slack", r))))
	}
	// A Slack channel takes about one message a second, its threads
	// included; more asked of it waits in the outbox (docs/testing.md).
	fmt.Printf("soak: messages per room (threads included) over the %s driven: %s\n", *durationFlag, strings.Join(per, ", "))
	dThrottled, _ := s.discord.Throttled()
	fmt.Printf("soak: schedule runs=%d, platform error answers: discord=%d slack=%d (429s of the published limits: discord=%d slack=%d), model calls=%d\n",
		schedRuns, dErrs, sErrs, dThrottled, s.slack.Throttled(), s.model.calls.Load())
	if len(vs) > 0 {
		fmt.Printf("soak: %d violations; the first ones, with the events around them:\n", len(vs))
		for _, v := range vs[:min(len(vs), 5)] {
			fmt.Printf("  [%s] %s\n%s", v.kind, v.what, s.log.around(v.at, 5*time.Second))
		}
		var all strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&all, "[%s] %s\n", v.kind, v.what)
		}
		if err := os.WriteFile(filepath.Join(s.dir, "violations.txt"), []byte(all.String()), 0o644); err != nil {
			s.t.Errorf("write the violations: %v", err)
		}
		fmt.Printf("soak: the replicas' logs, and every violation (violations.txt), are in %s\n", s.dir)
		fmt.Printf("soak: replay with %s\n", replay(s.seed))
	}
	fmt.Printf("soak: duration=%s seed=%d kills=%d stops=%d pg_restarts=%d conn_drops=%d platform_errors=%d model_errors=%d tasks=%d messages=%d lost=%d duplicated=%d out_of_order=%d\n",
		*durationFlag, s.seed, s.kills, s.stops, s.pgRestarts, s.connDrops, dErrs+sErrs, s.model.errors.Load(), len(tasks), messages, lost, duplicated, outOfOrder)
	if len(vs) > 0 {
		s.t.Fail()
	}
}

// killWindow is how soon after a command a kill of the replica that took
// it is noted with its loss.
const killWindow = 15 * time.Second

// killedAfter notes, for a lost command, that the replica that took it (on
// Discord, where every replica receives it, any) was killed within
// killWindow after it, "" when none was. A command lost so is a loss: a
// Slack event is stored before it is acknowledged. Its acknowledgement
// lost so is reported apart: a reply goes to the outbox before any wait
// for a rate limit, but a send in flight (a platform hanging up to the
// client's timeout) is only in the process until it fails.
func (s *soak) killedAfter(c *command) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.killed {
		if k.at.After(c.at) && k.at.Sub(c.at) < killWindow && (c.via < 0 || c.via == k.replica) {
			return fmt.Sprintf(" (replica %d killed %.3fs after it)", k.replica, k.at.Sub(c.at).Seconds())
		}
	}
	return ""
}

// refused says whether the room told the command's author that nothing
// was done because the database was unreachable.
func (s *soak) refused(c *command) bool {
	for _, m := range s.roomMessages(c.platform, c.room) {
		if !strings.Contains(m.text, "could not reach my database") {
			continue
		}
		if (c.platform == "discord" && m.replyTo == c.msgID) || (c.platform == "slack" && m.user == c.user) {
			return true
		}
	}
	return false
}

// channelOf is the fake's channel a task's room names.
func channelOf(room string) string {
	for f := range strings.FieldsFuncSeq(room, func(r rune) bool { return r == ':' || r == '/' || r == '#' }) {
		if slices.Contains(discordRooms, f) || slices.Contains(slackRooms, f) {
			return f
		}
	}
	return room
}
