-- STATS: the counters, in the order of struct csq_stats, with what earlier
-- operations of this call changed (common.lua); enqueued_total is the
-- sequence. Then the last event id that this state has seen
-- (event_id_now), which the admin view's snapshot carries.
OPS.stats = function()
	return reply('OK', counter('waiting'), counter('servicers'),
	             counter('rooms_busy'), counter('rooms_free'),
	             seq or counters().seq, counter('matched_total'),
	             counter('abandoned_total'), counter('requeued_total'),
	             counter('servicers_lost_total'), counter('offers_total'),
	             counter('offers_declined_total'),
	             counter('offers_missed_total'),
	             counter('transferred_total'), event_id_now())
end
