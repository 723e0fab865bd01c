-- PAUSE and RESUME: the servicer and its new status. PAUSE withdraws its
-- offers. RESUME says "ready for users now", whatever the status: the
-- missed-offer count starts again and a retry window ends;
-- servicer_resumed only when the status changes.
OPS.status = function(id, status)
	local s = servicer_load(id)
	if not s then return reply('NOTFOUND') end
	if status == 'paused' then
		if s.status == 'paused' then return reply('OK') end
		servicer_pause(s, 'pause')
		settle()
		return reply('OK')
	end
	local was_paused = s.status == 'paused'
	unaccount(s)
	s.status = 'ready'
	s.missed = 0
	if s.retry ~= 0 then
		s.retry = 0
		deadline_clear('r:' .. id)
	end
	if was_paused then event('servicer_resumed', s.id) end
	fill(s)
	account(s)
	servicer_save(s)
	return reply('OK')
end
