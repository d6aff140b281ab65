package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/taskloom/taskloom/domain"
)

var _ domain.PaceShares = (*Store)(nil)

// paceForget is how long a silent member's row, or a room window's
// after its last booking, is kept before a beat deletes it.
const paceForget = time.Minute

// sqlPaceBeat upserts the beat and reads the live members in one
// statement: the read's snapshot does not see the upsert, so the beat's
// own row is added to it. It deletes what has long been silent.
const sqlPaceBeat = `
WITH beat AS (
    INSERT INTO pace_members AS m (platform, bot, replica, seen_at, epoch, demand) VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (platform, bot, replica) DO UPDATE SET
        seen_at = EXCLUDED.seen_at,
        prev_epoch = CASE WHEN m.epoch < EXCLUDED.epoch THEN m.epoch ELSE m.prev_epoch END,
        prev_demand = CASE WHEN m.epoch < EXCLUDED.epoch THEN m.demand ELSE m.prev_demand END,
        demand = CASE WHEN m.epoch < EXCLUDED.epoch THEN EXCLUDED.demand ELSE m.demand END,
        epoch = GREATEST(m.epoch, EXCLUDED.epoch)
    RETURNING replica, seen_at, epoch, demand, prev_epoch, prev_demand
), gone AS (
    DELETE FROM pace_members WHERE platform = $1 AND bot = $2 AND seen_at < $8 AND replica <> $3
), over AS (
    DELETE FROM pace_rooms WHERE platform = $1 AND bot = $2 AND last_at < $8
)
SELECT replica, seen_at, epoch, demand, prev_epoch, prev_demand FROM pace_members
WHERE platform = $1 AND bot = $2 AND seen_at > $7 AND replica <> $3
UNION ALL
SELECT replica, seen_at, epoch, demand, prev_epoch, prev_demand FROM beat
ORDER BY replica`

// PaceBeat implements domain.PaceShares.
func (s *Store) PaceBeat(ctx context.Context, m domain.PaceMember, ttl time.Duration) ([]domain.PaceMember, error) {
	rows, err := s.pool.Query(ctx, sqlPaceBeat, m.Platform, m.Bot, m.Replica, m.At, m.Epoch, m.Demand, m.At.Add(-ttl), m.At.Add(-paceForget))
	if err != nil {
		return nil, fmt.Errorf("pace beat of %s: %w", m.Replica, err)
	}
	defer rows.Close()
	var out []domain.PaceMember
	for rows.Next() {
		p := domain.PaceMember{Platform: m.Platform, Bot: m.Bot}
		if err := rows.Scan(&p.Replica, &p.At, &p.Epoch, &p.Demand, &p.PrevEpoch, &p.PrevDemand); err != nil {
			return nil, fmt.Errorf("pace beat of %s: %w", m.Replica, err)
		}
		p.At = p.At.UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pace beat of %s: %w", m.Replica, err)
	}
	return out, nil
}

// PaceLeave implements domain.PaceShares.
func (s *Store) PaceLeave(ctx context.Context, platform, bot, replica string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM pace_members WHERE platform = $1 AND bot = $2 AND replica = $3`, platform, bot, replica); err != nil {
		return fmt.Errorf("leave the pace of %s: %w", replica, err)
	}
	return nil
}

// sqlPaceRoom books in a room's window when it has room, in one
// statement: the upsert's condition is checked on the row as it is when
// the upsert holds its lock, so two replicas booking at once in one
// window cannot both take its last place. The window as the statement's
// snapshot saw it comes back too, to say when it has room when the
// booking was refused.
const sqlPaceRoom = `
WITH booked AS (
    INSERT INTO pace_rooms AS r (platform, bot, bucket, sends, last_at) VALUES ($1, $2, $3, ARRAY[$4::timestamptz], $4)
    ON CONFLICT (platform, bot, bucket) DO UPDATE
    SET sends = (SELECT array_agg(t ORDER BY t) FROM
            (SELECT t FROM unnest(r.sends || $4::timestamptz) AS u(t) ORDER BY t DESC LIMIT $5) AS k),
        last_at = GREATEST(r.last_at, $4)
    WHERE (SELECT count(*) FROM unnest(r.sends) AS u(t) WHERE t > $6) < $5
    RETURNING true AS ok
)
SELECT COALESCE((SELECT ok FROM booked), false),
       COALESCE((SELECT sends FROM pace_rooms WHERE platform = $1 AND bot = $2 AND bucket = $3), '{}')`

// PaceRoom implements domain.PaceShares.
func (s *Store) PaceRoom(ctx context.Context, platform, bot, bucket string, at time.Time, n int, span time.Duration) (time.Time, bool, error) {
	if n <= 0 {
		return at, true, nil
	}
	var (
		ok    bool
		sends []time.Time
	)
	if err := s.pool.QueryRow(ctx, sqlPaceRoom, platform, bot, bucket, at, n, at.Add(-span)).Scan(&ok, &sends); err != nil {
		return time.Time{}, false, fmt.Errorf("pace room %s: %w", bucket, err)
	}
	if ok {
		return at, true, nil
	}
	// Refused: the window has room when the n-th latest booking ages.
	if len(sends) >= n {
		if free := sends[len(sends)-n].Add(span).UTC(); free.After(at) {
			return free, false, nil
		}
	}
	// The snapshot predates the booking that filled the window.
	return at.Add(span / time.Duration(n)), false, nil
}
