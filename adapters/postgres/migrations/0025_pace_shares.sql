-- The pace the replicas sending as one bot share (docs/deploy.md, "What
-- replicas share"; domain.PaceShares). pace_members holds each replica's
-- beat: the members that beat in the epoch (second) before split the
-- bot's global limit, in proportion to the demand each wrote then.
-- pace_rooms holds each room's window (its bucket: the channel its
-- messages count in), the times of its latest messages, which a replica
-- books in before it sends there, whichever replica sent there before.
-- Both are state of the last seconds, rebuilt within a second after a
-- loss: unlogged, and left out of dumps.
CREATE UNLOGGED TABLE pace_members (
    platform TEXT NOT NULL,
    bot      TEXT NOT NULL,
    replica  TEXT NOT NULL,
    seen_at  TIMESTAMPTZ NOT NULL,
    epoch       BIGINT NOT NULL,
    demand      INTEGER NOT NULL,
    prev_epoch  BIGINT NOT NULL DEFAULT 0,
    prev_demand INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, bot, replica)
);

CREATE UNLOGGED TABLE pace_rooms (
    platform TEXT NOT NULL,
    bot      TEXT NOT NULL,
    bucket   TEXT NOT NULL,
    sends    TIMESTAMPTZ[] NOT NULL,
    last_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (platform, bot, bucket)
);
CREATE INDEX pace_rooms_last_at ON pace_rooms (platform, bot, last_at);
