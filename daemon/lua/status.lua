-- PAUSE and RESUME: the servicer and its new status.
OPS.status = function(id, status)
	local s = servicer_load(id)
	if not s then return reply('NOTFOUND') end
	if s.status == status then return reply('OK') end
	unaccount(s)
	s.status = status
	local name = 'servicer_paused'
	if status == 'ready' then name = 'servicer_resumed' end
	event(name, ',"servicer":"%s"', s.id)
	fill(s)
	account(s)
	servicer_save(s)
	return reply('OK')
end
