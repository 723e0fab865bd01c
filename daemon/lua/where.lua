-- WHERE user.
OPS.where = function(id)
	local u = user_load(id)
	if not u then
		return reply('OK', 'none', '', 0, 0, 0, '', '', 0, 0, -1, '', 0)
	end
	return reply('OK', user_info(u))
end
