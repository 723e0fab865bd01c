-- PAUSE and RESUME: the servicer and its new status.
OPS.status = function(id, status)
	local s = servicer_load(id)
	if not s then return reply('NOTFOUND') end
	if s.status == status then return reply('OK') end
	unaccount(s)
	s.status = status
	if status == 'ready' then
		event('servicer_resumed', s.id)
	else
		event('servicer_paused', s.id, 'pause')
	end
	fill(s)
	account(s)
	servicer_save(s)
	return reply('OK')
end
