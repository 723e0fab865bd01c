-- STATS: the counters, in the order of struct csq_stats.
local h = redis.call('HMGET', STATS, 'waiting', 'servicers', 'rooms_busy',
                     'rooms_free', 'enqueued_total', 'matched_total',
                     'abandoned_total', 'requeued_total',
                     'servicers_lost_total')
for i = 1, 9 do h[i] = tonumber(h[i] or '0') end
return finish('OK', false, unpack(h))
