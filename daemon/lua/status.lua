-- PAUSE and RESUME: ARGV[5] servicer, [6] the new status.
local s = servicer_load(ARGV[5])
if not s then return finish('NOTFOUND', false) end
local status = ARGV[6]
if s.status == status then return finish('OK', false) end
unaccount(s)
s.status = status
account(s)
servicer_save(s)
local name = 'servicer_paused'
if status == 'ready' then name = 'servicer_resumed' end
add_str(event(name), 'servicer', s.id)
match_servicer(s)
return finish('OK', false)
