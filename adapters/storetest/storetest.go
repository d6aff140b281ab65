package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// t0 is the suite's "now"; tests move time by adding to it, never by
// sleeping.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Stores opens the stores the conformance suite runs on. Each store lives
// until t ends (it registers its own Close with t.Cleanup).
type Stores struct {
	// Empty opens a new store no migration was applied to.
	Empty func(t *testing.T) domain.Store
	// Migrated, when set, opens a new store every migration was applied
	// to, copied from one migrated once: faster than Empty and Migrate,
	// which the suite does when it is nil. The tests of Migrate itself
	// always start from Empty.
	Migrated func(t *testing.T) domain.Store
	// Exec runs a statement on s's database, past the store: how the
	// suite plays a newer Taskloom's migration.
	Exec func(t *testing.T, s domain.Store, query string)
}

// Run runs the conformance suite, each test on a new store it migrates.
func Run(t *testing.T, stores Stores) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s domain.Store)
	}{
		{"CreateNumbers", testCreateNumbers},
		{"CreateFields", testCreateFields},
		{"StrategyColumns", testStrategyColumns},
		{"CreateValidation", testCreateValidation},
		{"CreateConcurrent", testCreateConcurrent},
		{"GetUnknown", testGetUnknown},
		{"UpdateErrorWritesNothing", testUpdateErrorWritesNothing},
		{"UpdateRefusesBadMutation", testUpdateRefusesBadMutation},

		{"ClaimEmpty", testClaimEmpty},
		{"ClaimEvent", testClaimEvent},
		{"ClaimOrder", testClaimOrder},
		{"ClaimSkipsUnclaimable", testClaimSkipsUnclaimable},
		{"ClaimLease", testClaimLease},
		{"ClaimOnStoreClock", testClaimOnStoreClock},
		{"Release", testRelease},
		{"StaleFence", testStaleFence},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ClaimsTakeTurns", testClaimsTakeTurns},
		{"UpdateAndClaim", testUpdateAndClaim},
		{"UpdateAndClaimFails", testUpdateAndClaimFails},
		{"UpdateAndClaimEmpty", testUpdateAndClaimEmpty},
		{"ClaimsAheadTakeTurns", testClaimsAheadTakeTurns},
		{"LateCommitUncontested", testLateCommitUncontested},
		{"LateCommitContested", testLateCommitContested},

		{"LimitActive", testLimitActive},
		{"LimitConcurrent", testLimitConcurrent},
		{"CreateOncePerOrigin", testCreateOncePerOrigin},
		{"CreateOnceConcurrent", testCreateOnceConcurrent},
		{"LimitSubtasks", testLimitSubtasks},
		{"SubtaskBudget", testSubtaskBudget},
		{"SubtaskBudgetSiblings", testSubtaskBudgetSiblings},
		{"SubtasksWithCommit", testSubtasksWithCommit},
		{"SubtasksNotCreatedWithoutTheLease", testSubtasksNotCreatedWithoutTheLease},
		{"SubtaskLimitsInCommit", testSubtaskLimitsInCommit},
		{"SubtasksResumeParent", testSubtasksResumeParent},
		{"SubtasksEndedBeforeWait", testSubtasksEndedBeforeWait},
		{"AnswerOnlyAnswerWaits", testAnswerOnlyAnswerWaits},
		{"ModelUnavailable", testModelUnavailable},
		{"ResultStoredOnce", testResultStoredOnce},

		{"Lifecycle", testLifecycle},
		{"Terminal", testTerminal},
		{"Steps", testSteps},
		{"HistoryReads", testHistoryReads},
		{"PageSteps", testPageSteps},
		{"ToolSteps", testToolSteps},
		{"ToolStepsNeedTheLease", testToolStepsNeedTheLease},
		{"Digest", testDigest},
		{"Times", testTimes},
		{"DirtyText", testDirtyText},

		{"ListFilters", testListFilters},
		{"ListPaging", testListPaging},
		{"Search", testSearch},

		{"MemoryDedup", testMemoryDedup},
		{"RecentMemories", testRecentMemories},
		{"PruneMemories", testPruneMemories},
		{"RecallAnyWord", testRecallAnyWord},
		{"RecallStopWords", testRecallStopWords},
		{"RecallCraftedQuery", testRecallCraftedQuery},
		{"RecallScopes", testRecallScopes},
		{"RecallAfterWrites", testRecallAfterWrites},
		{"RecallBeforeID", testRecallBeforeID},
		{"RecallCommonWords", testRecallCommonWords},
		{"Facts", testFacts},
		{"FactsConcurrent", testFactsConcurrent},
		{"Forget", testForget},
		{"ForgetLeavesNoCopy", testForgetLeavesNoCopy},
		{"ForgetRacingFacts", testForgetRacingFacts},
		{"MoveRoom", testMoveRoom},
		{"OutboxReplyNotHeldBehindProgress", testOutboxReplyNotHeldBehindProgress},
		{"PruneFacts", testPruneFacts},
		{"Documents", testDocuments},
		{"LargeDocument", testLargeDocument},
		{"MemoryListing", testMemoryListing},
		{"Embeddings", testEmbeddings},
		{"EventsSince", testEventsSince},
		{"EventsSinceWhileWriting", testEventsSinceWhileWriting},
		{"EventStreamExactlyOnce", testEventStreamExactlyOnce},

		{"OutboxEnqueue", testOutboxEnqueue},
		{"OutboxRoomHeads", testOutboxRoomHeads},
		{"OutboxClaimExclusive", testOutboxClaimExclusive},
		{"OutboxClaimExpiry", testOutboxClaimExpiry},
		{"OutboxRelease", testOutboxRelease},
		{"OutboxGiveBack", testOutboxGiveBack},
		{"OutboxSettleQueued", testOutboxSettleQueued},
		{"OutboxSkipPlatforms", testOutboxSkipPlatforms},
		{"OutboxCategories", testOutboxCategories},
		{"OutboxClaimLimit", testOutboxClaimLimit},
		{"OutboxRoom", testOutboxRoom},
		{"OutboxLastSent", testOutboxLastSent},
		{"OutboxFromMutation", testOutboxFromMutation},
		{"OutboxConcurrent", testOutboxConcurrent},
		{"OutboxRenewClaim", testOutboxRenewClaim},
		{"OutboxBeginSend", testOutboxBeginSend},
		{"OutboxDeadLetters", testOutboxDeadLetters},
		{"OutboxListNotifications", testOutboxListNotifications},
		{"OutboxOrder", testOutboxOrder},
		{"OutboxProgressNeverBack", testOutboxProgressNeverBack},
		{"MoveTask", testMoveTask},
		{"TaskCards", testTaskCards},

		{"FilesWithMutation", testFilesWithMutation},
		{"FileReads", testFileReads},
		{"FileLimits", testFileLimits},
		{"FilesNotWrittenWithoutTheLease", testFilesNotWrittenWithoutTheLease},
		{"FilesCopiedToRetry", testFilesCopiedToRetry},
		{"ImportFiles", testImportFiles},

		{"ScheduleCreate", testScheduleCreate},
		{"ScheduleFire", testScheduleFire},
		{"ScheduleFireConcurrent", testScheduleFireConcurrent},
		{"ScheduleOverlap", testScheduleOverlap},
		{"ScheduleCatchUp", testScheduleCatchUp},
		{"ScheduleLimit", testScheduleLimit},
		{"ScheduleAutoPause", testScheduleAutoPause},
		{"ScheduleSkips", testScheduleSkips},
		{"SchedulePauseDelete", testSchedulePauseDelete},

		{"PaceShares", testPaceShares},
	}
	// The tests of Migrate get an empty store.
	t.Run("MigrateTwice", func(t *testing.T) { testMigrateTwice(t, stores.Empty(t)) })
	t.Run("MigrateConcurrently", func(t *testing.T) { testMigrateConcurrently(t, stores.Empty(t)) })
	t.Run("DumpRoundTrip", func(t *testing.T) {
		s := stores.Empty(t)
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		testDumpRoundTrip(t, s, stores.Empty)
	})
	t.Run("MigrateRefusesANewerSchema", func(t *testing.T) {
		if stores.Exec == nil {
			t.Fatal("Stores.Exec is not set: the schema guard goes untested")
		}
		testMigrateRefusesANewerSchema(t, stores.Empty(t), stores.Exec)
	})
	t.Run("OutboxRoomHeadsRepaired", func(t *testing.T) {
		s := stores.Empty(t)
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		testOutboxRoomHeadsRepaired(t, s, stores.Exec)
	})
	open := stores.Migrated
	if open == nil {
		open = stores.Empty
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			// On a migrated store Migrate finds nothing to apply, and
			// readies the store as on a restart (SQLite prepares its
			// statements).
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			tc.fn(t, s)
		})
	}
}

// newTask is the request the tests create tasks with, unless they say
// otherwise.
func newTask(goal string) domain.NewTask {
	return domain.NewTask{
		Goal:        goal,
		RequestorID: "u1",
		Platform:    "discord",
		RoomID:      "room-1",
		WorkspaceID: "guild-1",
		Actor:       "u1",
		Now:         t0,
	}
}

func create(t *testing.T, s domain.Store, in domain.NewTask) domain.Task {
	t.Helper()
	task, err := s.CreateTask(t.Context(), in)
	if err != nil {
		t.Fatalf("CreateTask(%q): %v", in.Goal, err)
	}
	return task
}

func get(t *testing.T, s domain.Store, number int64) domain.Task {
	t.Helper()
	task, err := s.GetTask(t.Context(), number)
	if err != nil {
		t.Fatalf("GetTask(%d): %v", number, err)
	}
	return task
}

func claim(t *testing.T, s domain.Store, owner string, now time.Time, lease time.Duration) domain.Task {
	t.Helper()
	task, err := s.ClaimTask(t.Context(), domain.Claim{Owner: owner, Now: now, Lease: lease})
	if err != nil {
		t.Fatalf("ClaimTask(%s at %v): %v", owner, now, err)
	}
	return task
}

func noClaim(t *testing.T, s domain.Store, now time.Time) {
	t.Helper()
	task, err := s.ClaimTask(t.Context(), domain.Claim{Owner: "nobody", Now: now, Lease: time.Minute})
	if !errors.Is(err, domain.ErrNoTask) {
		t.Fatalf("ClaimTask at %v = task #%d (%s), %v; want ErrNoTask", now, task.Number, task.Status, err)
	}
}

func update(t *testing.T, s domain.Store, number int64, fn domain.MutateFunc) domain.Task {
	t.Helper()
	task, err := s.UpdateTask(t.Context(), number, fn)
	if err != nil {
		t.Fatalf("UpdateTask(#%d): %v", number, err)
	}
	return task
}

// outcome is an iteration result for a task the caller claimed.
func outcome(claimed domain.Task, now time.Time, progress int, v domain.Verdict) domain.Outcome {
	return domain.Outcome{
		Owner: claimed.LeaseOwner,
		Fence: claimed.Fence,
		Now:   now,
		Step: domain.Step{
			Thought: "next step",
			Action:  "post_message",
			Params:  json.RawMessage(`{"text":"working"}`),
			Result:  "posted",
			Success: true,
		},
		Progress:         progress,
		Verdict:          v,
		PromptTokens:     10,
		CompletionTokens: 5,
	}
}

func iterate(t *testing.T, s domain.Store, claimed domain.Task, now time.Time, progress int, v domain.Verdict) domain.Task {
	t.Helper()
	o := outcome(claimed, now, progress, v)
	return update(t, s, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, o)
	})
}

func events(t *testing.T, s domain.Store, number int64) []domain.TaskEvent {
	t.Helper()
	evs, err := s.TaskEvents(t.Context(), number, 0)
	if err != nil {
		t.Fatalf("TaskEvents(#%d): %v", number, err)
	}
	return evs
}

func eventTypes(evs []domain.TaskEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// check replays every given task's events against its row, as `taskloom
// check` does, and fails the test on any violation.
func check(t *testing.T, s domain.Store, numbers ...int64) {
	t.Helper()
	for _, n := range numbers {
		row := get(t, s, n)
		steps, err := s.Steps(t.Context(), n)
		if err != nil {
			t.Fatalf("Steps(#%d): %v", n, err)
		}
		for _, v := range domain.Check(row, events(t, s, n), len(steps)) {
			t.Errorf("check: %v", v)
		}
	}
}

// sameTask fails the test unless got and want agree on every column,
// event_seq included.
func sameTask(t *testing.T, what string, got, want domain.Task) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) || got.EventSeq != want.EventSeq {
		t.Errorf("%s:\n got %s event_seq=%d\nwant %s event_seq=%d", what, g, got.EventSeq, w, want.EventSeq)
	}
}

func numbers(tasks []domain.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, task := range tasks {
		out[i] = task.Number
	}
	return out
}

// payload decodes an event's payload.
func payload(t *testing.T, e domain.TaskEvent) domain.EventPayload {
	t.Helper()
	var p domain.EventPayload
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatalf("event %d (%s) payload %s: %v", e.Sequence, e.Type, e.Payload, err)
	}
	return p
}

// jsonEqual reports whether a and b are the same JSON value (PostgreSQL's
// jsonb does not keep key order or spacing).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
