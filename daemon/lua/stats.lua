-- STATS: the counters, in the order of struct csq_stats, with what earlier
-- operations of this call changed (common.lua); enqueued_total is the
-- sequence and waiting is derived. Then the last event id that this state
-- has seen (event_id_now), which the admin view's snapshot carries.
OPS.stats = function()
	local enqueued, matched = seq or counters().seq, counter('matched_total')
	local abandoned = counter('abandoned_total')
	local requeued = counter('requeued_total')
	return reply('OK', enqueued + requeued - matched - abandoned,
	             counter('servicers'), counter('rooms_busy'),
	             counter('rooms_free'), enqueued, matched, abandoned, requeued,
	             counter('servicers_lost_total'), event_id_now())
end
