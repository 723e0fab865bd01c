-- LOGOUT servicer. Unknown: nothing to do, 0 requeued.
OPS.logout = function(id)
	local s = servicer_load(id)
	if not s then return reply('OK', 0) end
	local n = servicer_drop(s, 'logout')
	settle()
	return reply('OK', n)
end
