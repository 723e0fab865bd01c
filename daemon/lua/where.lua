-- WHERE: ARGV[5] user.
local u = user_load(ARGV[5])
if not u then return finish('OK', false, 'none', '', 0, 0, 0, '', '', 0) end
return finish('OK', false, user_info(u))
