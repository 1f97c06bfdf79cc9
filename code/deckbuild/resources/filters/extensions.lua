-- deckbuild: Quarto extensions' shortcodes and Lua filters, run as Quarto runs them.
--
-- Quarto runs an extension's Lua code inside its own pandoc filter, where a global
-- `quarto` module offers the document's format, HTML dependencies, includes and logging.
-- This filter does the same for deckbuild: it reads the plan the renderer wrote (a JSON
-- file named by the metadata field deckbuild-extensions: shortcode files, filter files by
-- stage, where dependencies go), gives the extension code a `quarto` module of our own
-- (the part of Quarto's Lua API that reveal.js decks use), then
--   stage "pre":  calls the shortcode handlers for the markers source.py left (a raw
--                 inline of format deckbuild-shortcode holding the shortcode as JSON),
--                 then runs the filters listed before Quarto's own;
--   stage "post": runs the filters listed after `quarto` in `filters:`.
-- Each stage appends the HTML dependencies and includes its code asked for to the
-- metadata the template prints (deckbuild-deps-head, header-includes,
-- deckbuild-include-before, deckbuild-deps-after) and writes the files to copy to the
-- plan's manifest (renderer: pandoc.py copies them beside a linked deck).
-- Warnings go to stderr as "[deckbuild-ext] WARNING <file>:<line>: <text>".

local STAGE = DECKBUILD_STAGE or "pre"

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local plan = nil
local deps = {}          -- name -> dependency, in order of first use
local dep_order = {}
local includes = { ["in-header"] = {}, ["before-body"] = {}, ["after-body"] = {} }
local script_stack = {}
local where_stack = {}   -- the source place of the shortcode being handled

local function current_script()
  return script_stack[#script_stack]
end

local function with_script(file, fn, ...)
  table.insert(script_stack, file)
  local results = table.pack(pcall(fn, ...))
  table.remove(script_stack)
  if not results[1] then
    error(results[2], 0)
  end
  return table.unpack(results, 2, results.n)
end

local function warn(text)
  local where = where_stack[#where_stack]
  local line = where and (math.tointeger(where.line) or where.line)
  local place = where and (where.file .. ":" .. tostring(line)) or (plan and plan.input_file or "")
  io.stderr:write("[deckbuild-ext] WARNING " .. place .. ": " .. text .. "\n")
end

local function script_dir()
  local file = current_script()
  return file and pandoc.path.directory(file) or (plan and plan.input_dir or ".")
end

local function resolve_path(path)
  if pandoc.path.is_absolute(path) then return path end
  return pandoc.path.normalize(pandoc.path.join({ script_dir(), path }))
end

-- ------------------------------------------------------------------- the quarto module

local function is_format(name)
  -- deckbuild writes revealjs: an HTML slide format that runs JavaScript
  return name == "revealjs" or name == "html" or name == "html:js"
end

local function as_list(value)
  if value == nil then return {} end
  if type(value) == "string" then return { value } end
  if value.path ~= nil then return { value } end
  return value
end

local function add_html_dependency(dep)
  if type(dep) ~= "table" or type(dep.name) ~= "string" then
    error("quarto.doc.add_html_dependency: the dependency needs a name", 2)
  end
  if deps[dep.name] then return end   -- Quarto keeps the first of a name
  local entry = { name = dep.name, version = dep.version and tostring(dep.version) or nil,
                  scripts = {}, stylesheets = {}, resources = {}, head = dep.head,
                  meta = dep.meta, links = dep.links }
  local function file_item(item)
    local path = type(item) == "string" and item or item.path
    return { path = resolve_path(path), attribs = type(item) == "table" and item.attribs or nil,
             after_body = type(item) == "table" and (item.afterBody or item["after-body"]) or false }
  end
  for _, s in ipairs(as_list(dep.scripts)) do table.insert(entry.scripts, file_item(s)) end
  for _, s in ipairs(as_list(dep.stylesheets)) do table.insert(entry.stylesheets, file_item(s)) end
  for _, s in ipairs(as_list(dep.resources)) do table.insert(entry.resources, file_item(s)) end
  deps[dep.name] = entry
  table.insert(dep_order, dep.name)
end

local function include_text(location, text)
  if includes[location] == nil then
    error("quarto.doc.include_text: location must be in-header, before-body or after-body, got "
          .. tostring(location), 2)
  end
  table.insert(includes[location], text)
end

local function include_file(location, path)
  local text = read_file(resolve_path(path))
  if text == nil then
    error("quarto.doc.include_file: file not found: " .. resolve_path(path), 2)
  end
  include_text(location, text)
end

local function stringify_meta(value)
  if value == nil then return nil end
  return pandoc.utils.stringify(value)
end

local json = pandoc.json
local function dump(value, indent)
  indent = indent or ""
  if type(value) ~= "table" then return tostring(value) end
  local parts = {}
  for k, v in pairs(value) do
    table.insert(parts, indent .. "  " .. tostring(k) .. ": " .. dump(v, indent .. "  "))
  end
  return "{\n" .. table.concat(parts, "\n") .. "\n" .. indent .. "}"
end

local function as_inlines(value)
  if value == nil then return pandoc.Inlines({}) end
  if type(value) == "string" then return pandoc.Inlines({ pandoc.Str(value) }) end
  local kind = pandoc.utils.type(value)
  if kind == "Inlines" then return value end
  if kind == "Inline" then return pandoc.Inlines({ value }) end
  if kind == "Blocks" then return pandoc.utils.blocks_to_inlines(value) end
  if kind == "Block" then return pandoc.utils.blocks_to_inlines({ value }) end
  return pandoc.Inlines(value)
end

local function as_blocks(value)
  if value == nil then return pandoc.Blocks({}) end
  if type(value) == "string" then return pandoc.Blocks({ pandoc.Para({ pandoc.Str(value) }) }) end
  local kind = pandoc.utils.type(value)
  if kind == "Blocks" then return value end
  if kind == "Block" then return pandoc.Blocks({ value }) end
  if kind == "Inlines" then return pandoc.Blocks({ pandoc.Para(value) }) end
  if kind == "Inline" then return pandoc.Blocks({ pandoc.Para({ value }) }) end
  return pandoc.Blocks(value)
end

local function noop() end
local function log_to(level)
  return function(...)
    local parts = {}
    for _, v in ipairs({ ... }) do table.insert(parts, type(v) == "table" and dump(v) or tostring(v)) end
    if level == "warning" or level == "error" then
      warn(table.concat(parts, " "))
    end
  end
end

local doc_format = {
  is_format = is_format, isFormat = is_format,
  is_html_output = function() return true end, isHtmlOutput = function() return true end,
  is_revealjs_output = function() return true end,
  is_slide_output = function() return true end,
  is_latex_output = function() return false end, isLatexOutput = function() return false end,
  is_typst_output = function() return false end,
  is_docx_output = function() return false end,
  is_epub_output = function() return false end,
  is_markdown_output = function() return false end,
  is_raw_html = function(el) return el.format:match("^html") ~= nil end,
}

quarto = {
  version = nil,      -- set from the plan
  doc = {
    is_format = is_format, isFormat = is_format,
    add_html_dependency = add_html_dependency, addHtmlDependency = add_html_dependency,
    attach_to_dependency = noop, attachToDependency = noop,
    include_text = include_text, includeText = include_text,
    include_file = include_file, includeFile = include_file,
    use_latex_package = noop, useLatexPackage = noop,
    add_format_resource = noop, addFormatResource = noop,
    add_resource = noop, add_supporting = noop,
    has_bootstrap = function() return false end, hasBootstrap = function() return false end,
    cite_method = function() return "citeproc" end, citeMethod = function() return "citeproc" end,
    pdf_engine = function() return nil end,
    is_filter_active = function() return false end,
  },
  format = doc_format,
  log = { output = log_to("output"), warning = log_to("warning"), error = log_to("error"),
          info = noop, debug = noop, trace = noop, setloglevel = noop },
  utils = {
    resolve_path = resolve_path, resolvePath = resolve_path,
    dump = function(v) io.stderr:write(dump(v) .. "\n") end,
    as_inlines = as_inlines, as_blocks = as_blocks,
    string_to_inlines = function(s) return pandoc.utils.blocks_to_inlines(pandoc.read(s, "markdown").blocks) end,
    string_to_blocks = function(s) return pandoc.read(s, "markdown").blocks end,
    type = pandoc.utils.type,
  },
  json = { encode = json and json.encode, decode = json and json.decode },
  metadata = {},
  project = {},
  shortcode = {
    read_arg = function(args, n)
      local arg = args[n or 1]
      if arg == nil then return nil end
      return type(arg) == "string" and arg or pandoc.utils.stringify(arg)
    end,
    error_output = function(name, message) return pandoc.Strong({ pandoc.Str("?" .. name) }) end,
  },
}

-- ------------------------------------------------------------------- loading code

-- require() from extension code looks beside the files being run too (countdown.lua's
-- require("config")), and "./x" is relative to the calling file, as under Quarto
local base_require = require
function require(name)
  if name:sub(1, 1) == "." then
    local caller = debug.getinfo(2, "S").source:sub(2)
    local dir = pandoc.path.directory(caller)
    if dir == "." then dir = script_dir() end
    name = pandoc.path.normalize(pandoc.path.join({ dir, name }))
    local file = name:gsub("%.lua$", "") .. ".lua"
    if package.loaded[file] == nil then package.loaded[file] = dofile(file) or true end
    return package.loaded[file]
  end
  local saved = package.path
  for i = #script_stack, 1, -1 do
    package.path = package.path .. ";" .. pandoc.path.join({ pandoc.path.directory(script_stack[i]), "?.lua" })
  end
  local ok, result = pcall(base_require, name)
  package.path = saved
  if not ok then error(result, 2) end
  return result
end

local SANDBOX_BASE = _G

local function load_chunk(file)
  local env = setmetatable({ PANDOC_SCRIPT_FILE = file }, { __index = SANDBOX_BASE })
  local chunk, err = loadfile(file, "bt", env)
  if not chunk then
    error("could not load " .. file .. ": " .. tostring(err), 0)
  end
  local result = with_script(file, chunk)
  return result, env
end

local ELEMENT_NAMES = {}
for _, name in ipairs({ "Pandoc", "Meta", "Blocks", "Inlines", "Block", "Inline",
  "BlockQuote", "BulletList", "CodeBlock", "DefinitionList", "Div", "Figure", "Header",
  "HorizontalRule", "LineBlock", "OrderedList", "Para", "Plain", "RawBlock", "Table",
  "Cite", "Code", "Emph", "Image", "LineBreak", "Link", "Math", "Note", "Quoted", "RawInline",
  "SmallCaps", "SoftBreak", "Space", "Span", "Str", "Strikeout", "Strong", "Subscript",
  "Superscript", "Underline" }) do
  ELEMENT_NAMES[name] = true
end

-- A filter file's filters, as pandoc reads them: the list (or the one filter) it returns,
-- else the element functions it defines globally.
local function filters_of(file)
  local result, env = load_chunk(file)
  local found = {}
  if type(result) == "table" then
    if result[1] ~= nil then
      for _, f in ipairs(result) do table.insert(found, f) end
    else
      table.insert(found, result)
    end
  else
    local f = {}
    for name, value in pairs(env) do
      if (ELEMENT_NAMES[name] and type(value) == "function") or name == "traverse" then
        f[name] = value
      end
    end
    table.insert(found, f)
  end
  -- each function runs with its file as the current script (resolve_path, dependencies)
  for _, f in ipairs(found) do
    for name, value in pairs(f) do
      if type(value) == "function" then
        f[name] = function(...) return with_script(file, value, ...) end
      end
    end
  end
  return found
end

-- ------------------------------------------------------------------- shortcodes

local handlers = {}

local function load_shortcodes(files)
  for _, file in ipairs(files) do
    local result, env = load_chunk(file)
    local source = type(result) == "table" and result or env
    for name, fn in pairs(source) do
      if type(fn) == "function" and type(name) == "string" and name ~= "PANDOC_SCRIPT_FILE" then
        handlers[name] = { file = file, handle = fn }
      end
    end
  end
end

local function meta_value(meta, key)
  local value = meta
  for part in key:gmatch("[^.]+") do
    if type(value) ~= "table" then return nil end
    value = value[part]
  end
  return value
end

local builtins = {}

builtins.meta = function(args, kwargs, meta)
  local key = args[1]
  local value = key and meta_value(meta, key)
  if value == nil then
    warn("unknown meta key " .. tostring(key) .. " in a meta shortcode (Quarto prints ?meta:" .. tostring(key) .. ")")
    return pandoc.Inlines({ pandoc.Strong({ pandoc.Str("?meta:" .. tostring(key)) }) })
  end
  if type(value) == "boolean" or type(value) == "number" then
    return pandoc.Inlines({ pandoc.Str(tostring(value)) })
  end
  if type(value) == "string" then return pandoc.Inlines({ pandoc.Str(value) }) end
  return value
end

builtins.var = function(args)
  local key = args[1]
  local value = key and meta_value(plan.variables or {}, key)
  if value == nil then
    warn("unknown variable " .. tostring(key) .. " in a var shortcode (Quarto prints ?var:" .. tostring(key) .. ")")
    return pandoc.Inlines({ pandoc.Strong({ pandoc.Str("?var:" .. tostring(key)) }) })
  end
  if type(value) == "table" then
    return pandoc.utils.blocks_to_inlines(pandoc.read(tostring(value[1] or ""), "markdown").blocks)
  end
  return pandoc.utils.blocks_to_inlines(pandoc.read(tostring(value), "markdown").blocks)
end

builtins.env = function(args)
  local value = args[1] and os.getenv(args[1])
  if value == nil then
    warn("environment variable " .. tostring(args[1]) .. " is not set (Quarto prints ?env:" .. tostring(args[1]) .. ")")
    return pandoc.Inlines({ pandoc.Strong({ pandoc.Str("?env:" .. tostring(args[1])) }) })
  end
  return pandoc.Inlines({ pandoc.Str(value) })
end

builtins.version = function()
  return pandoc.Inlines({ pandoc.Str(plan.quarto_version or "") })
end

builtins.kbd = function(args, kwargs)
  local keys = kwargs.linux or kwargs.win or kwargs.mac or args[1] or ""
  return pandoc.Inlines({ pandoc.RawInline("html", "<kbd>" .. pandoc.utils.stringify(keys) .. "</kbd>") })
end

-- {{< video src >}} as Quarto's video extension writes it for revealjs (no wrapper div):
-- YouTube and Vimeo as their players' iframes, a file as a <video> element (Quarto adds
-- video.js to it; deckbuild leaves the browser's own controls); a width or height missing
-- is computed from aspect-ratio
local function attr(name, value)
  return value and value ~= "" and (" " .. name .. '="' .. tostring(value):gsub('"', "&quot;") .. '"') or ""
end

builtins.video = function(args, kwargs)
  local function kw(name)
    local v = pandoc.utils.stringify(kwargs[name] or "")
    return v ~= "" and v or nil
  end
  local src = kw("src") or (args[1] and pandoc.utils.stringify(args[1]))
  if not src then
    warn("a video shortcode needs a source (Quarto's {{< video URL >}})")
    return pandoc.Inlines({})
  end
  local width, height, ratio = tonumber(kw("width")), tonumber(kw("height")), kw("aspect-ratio")
  if ratio then
    local w, h = ratio:gsub("[\"']", ""):match("^(%d+)x(%d+)$")
    if w then
      if height and not width then width = math.floor(height * w / h + 0.5)
      elseif width and not height then height = math.floor(width * h / w + 0.5) end
    end
  end
  local size = attr("width", width and math.tointeger(width) or width) .. attr("height", height and math.tointeger(height) or height)
  local title = kw("title") or ""
  local start = kw("start")
  local youtube = src:match("^https://www%.youtube%.com/embed/(.+)$") or src:match("^https://www%.youtube%.com/shorts/(.+)$")
    or src:match("^https://www%.youtube%-nocookie%.com/embed/(.+)$") or src:match("^https://youtu%.be/(.+)$")
    or src:match("%?v=(.-)&") or src:match("%?v=(.-)$")
  local html
  if youtube then
    html = '<iframe data-external="1" src="https://www.youtube.com/embed/' .. youtube .. (start and ("?start=" .. start) or "")
      .. '"' .. size .. ' title="' .. title .. '" frameborder="0" allow="accelerometer; autoplay; '
      .. 'clipboard-write; encrypted-media; gyroscope; picture-in-picture" allowfullscreen></iframe>'
  elseif src:match("^https://vimeo%.com/") or src:match("^https://player%.vimeo%.com/") then
    local id = src:match("vimeo%.com/video/(.+)$") or src:match("vimeo%.com/(.+)$")
    html = '<iframe data-external="1" src="https://player.vimeo.com/video/' .. id .. '"' .. size
      .. ' frameborder="0" title="' .. title .. '" allow="autoplay; fullscreen; picture-in-picture" allowfullscreen></iframe>'
  else
    html = '<video' .. size .. ' controls preload="auto" title="' .. title .. '"><source src="' .. src .. '"></video>'
  end
  return pandoc.Blocks({ pandoc.RawBlock("html", html) })
end

builtins.pagebreak = function()
  return pandoc.Blocks({ pandoc.RawBlock("html", '<div style="page-break-after: always;"></div>') })
end

local function kwargs_of(args)
  local kw = setmetatable({}, { __index = function() return pandoc.Inlines({}) end })
  local positional = pandoc.List()
  local raw = pandoc.List()
  for _, a in ipairs(args) do
    if a.name then kw[a.name] = a.value else positional:insert(a.value) end
    raw:insert(a.value)
  end
  return positional, kw, raw
end

local function meta_proxy(doc_meta)
  return setmetatable({}, { __index = function(_, key) return doc_meta[key] end })
end

-- The shortcode's result in the place it stands: a block where it is alone in its
-- paragraph, else inlines (as Quarto's shortcodeResultAsBlocks / AsInlines).
local function call_shortcode(marker, context, doc_meta)
  local sc = json.decode(marker.text, false)
  table.insert(where_stack, { file = sc.file, line = sc.line })
  local positional, kw, raw = kwargs_of(sc.args or {})
  local result
  local handler = handlers[sc.name]
  if handler then
    result = with_script(handler.file, handler.handle, positional, kw, meta_proxy(doc_meta), raw, context)
  elseif builtins[sc.name] then
    result = builtins[sc.name](positional, kw, meta_proxy(doc_meta), raw, context)
  else
    warn("shortcode '" .. sc.name .. "' is not one of Quarto's nor of an installed extension; "
         .. "it is left as written (Quarto warns too)")
  end
  table.remove(where_stack)
  if result == nil then
    return context == "block" and pandoc.Blocks({ pandoc.Plain({ pandoc.RawInline("html", sc.raw) }) })
      or pandoc.Inlines({ pandoc.RawInline("html", sc.raw) })
  end
  if context == "block" then return as_blocks(result) end
  if type(result) ~= "string" and pandoc.utils.type(result) == "Blocks" then
    return pandoc.utils.blocks_to_inlines(result, { pandoc.Space() })
  end
  return as_inlines(result)
end

local function is_marker(el)
  return el and el.t == "RawInline" and el.format == "deckbuild-shortcode"
end

local function resolve_shortcodes(doc)
  local meta = doc.meta
  local function block(el)
    if #el.content == 1 and is_marker(el.content[1]) then
      return call_shortcode(el.content[1], "block", meta)
    end
  end
  doc = doc:walk({ Para = block, Plain = block })
  return doc:walk({
    RawInline = function(el)
      if is_marker(el) then return call_shortcode(el, "inline", meta) end
    end,
  })
end

-- ------------------------------------------------------------------- dependencies

local function attrs_html(attribs)
  if type(attribs) ~= "table" then return "" end
  local keys = {}
  for k in pairs(attribs) do table.insert(keys, k) end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    table.insert(out, " " .. k .. '="' .. tostring(attribs[k]):gsub('"', "&quot;") .. '"')
  end
  return table.concat(out)
end

-- Where the page finds a dependency's file: beside a linked deck in
-- <prefix>/<name>-<version>/<file name> (as Quarto's quarto-contrib folder), else the file
-- itself (pandoc embeds it).
local function href(entry, item, copies)
  if plan.deps.mode ~= "linked" then return item.path end
  local folder = entry.name .. (entry.version and ("-" .. entry.version) or "")
  local rel = folder .. "/" .. pandoc.path.filename(item.path)
  table.insert(copies, { src = item.path, dest = rel })
  return plan.deps.prefix .. "/" .. rel
end

local function meta_list(meta, key)
  local value = meta[key]
  if value == nil then return pandoc.List() end
  if pandoc.utils.type(value) == "List" then return value end
  return pandoc.List({ value })
end

local function flush(doc)
  local seen = {}
  local before = doc.meta["deckbuild-deps-names"]
  for n in pandoc.utils.stringify(before or ""):gmatch("[^\n]+") do seen[n] = true end
  local head, after, copies = {}, {}, {}
  for _, name in ipairs(dep_order) do
    if not seen[name] then
      local entry = deps[name]
      for _, s in ipairs(entry.scripts) do
        local tag = '<script src="' .. href(entry, s, copies) .. '"' .. attrs_html(s.attribs) .. "></script>"
        table.insert(s.after_body and after or head, tag)
      end
      for _, s in ipairs(entry.stylesheets) do
        table.insert(head, '<link href="' .. href(entry, s, copies) .. '" rel="stylesheet"' .. attrs_html(s.attribs) .. ">")
      end
      for _, s in ipairs(entry.resources) do href(entry, s, copies) end
      if type(entry.head) == "string" then table.insert(head, entry.head) end
      seen[name] = true
    end
  end
  local names = {}
  for name in pairs(seen) do table.insert(names, name) end
  table.sort(names)
  doc.meta["deckbuild-deps-names"] = pandoc.MetaString(table.concat(names, "\n"))
  local function append(key, items)
    if #items == 0 then return end
    local list = meta_list(doc.meta, key)
    for _, text in ipairs(items) do list:insert(pandoc.MetaBlocks({ pandoc.RawBlock("html", text) })) end
    doc.meta[key] = pandoc.MetaList(list)
  end
  append("deckbuild-deps-head", head)
  append("deckbuild-deps-after", after)
  append("header-includes", includes["in-header"])
  append("deckbuild-include-before", includes["before-body"])
  append("deckbuild-deps-after", includes["after-body"])
  -- the files a linked deck copies (appended to what an earlier stage listed)
  local listed = {}
  local old = read_file(plan.deps.manifest)
  if old and old ~= "" then listed = json.decode(old, false) end
  for _, c in ipairs(copies) do table.insert(listed, c) end
  write_file(plan.deps.manifest, json.encode(listed))
  return doc
end

-- ------------------------------------------------------------------- the stage

function Pandoc(doc)
  local plan_file = doc.meta["deckbuild-extensions"]
  if plan_file == nil then return nil end
  plan = json.decode(read_file(pandoc.utils.stringify(plan_file)), false)
  quarto.version = plan.quarto_version
  quarto.doc.input_file = plan.input_file
  quarto.doc.output_file = plan.output_file
  quarto.project.directory = plan.project_dir
  quarto.project.offset = plan.project_offset
  if STAGE == "pre" then
    -- reveal.js plugins of extensions: their scripts and stylesheets (init registers them)
    for _, plugin in ipairs(plan.plugins or {}) do
      add_html_dependency({ name = plugin.name, scripts = plugin.scripts,
                            stylesheets = plugin.stylesheets })
    end
    load_shortcodes(plan.shortcodes or {})
    doc = resolve_shortcodes(doc)
  end
  for _, file in ipairs((plan.filters or {})[STAGE] or {}) do
    for _, f in ipairs(filters_of(file)) do
      doc = doc:walk(f)
    end
  end
  return flush(doc)
end
