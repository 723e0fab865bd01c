-- The earliest deadline and the time: the daemons' timer and health check.
OPS.peek = function()
	exact = true
	return reply('OK')
end
