// Package schedules is the scheduler: it creates a task from a schedule's
// goal at each time of its cron expression (docs/schedules.md).
//
// Every replica runs the same loop, with no leader: it sleeps on the
// injected clock until the earliest due time (or until a schedule changes
// in this process, or at most MaxSleep, so it sees what other replicas
// changed), then asks the store to fire what is due. The store claims a
// due schedule, creates its run and moves its next due time on in one
// transaction (domain.ScheduleStore.FireSchedule), so whichever replica
// gets there first fires a due time, and it fires once.
//
// The Service is also what chat commands, the API and the dashboard
// create, list, pause, resume and delete schedules through: it checks
// the strategy and the shortest interval, and who may change what.
package schedules
