-- +goose Up
SET lock_timeout = '5s';

-- A claimed send names its holder: the send worker's lease is short and
-- renewed while the send goes on (app.SenderConfig), and only the holder
-- renews it or puts the send back, so a worker that lost its claim (its
-- lease ran out, another took the send) changes nothing of the new
-- holder's. NULL: not claimed.
ALTER TABLE outbound_sends ADD COLUMN claim_token uuid;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE outbound_sends DROP COLUMN claim_token;
