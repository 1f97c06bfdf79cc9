-- deckbuild: tabsets (https://quarto.org/docs/output-formats/html-basics.html#tabsets),
-- in the markup Quarto writes for revealjs (quarto-cli src/resources/filters/customnodes/
-- panel-tabset.lua, its "tabby" renderer):
--
--   ::: {.panel-tabset}            <div class="panel-tabset">
--   ### One                          <ul id="tabset-1" class="panel-tabset-tabby">
--   text                               <li><a data-tabby-default href="#tabset-1-1">One</a></li> ...
--   ### Two                          </ul>
--   more                             <div class="tab-content">
--   :::                                <div id="tabset-1-1"> text </div> ... </div></div>
--
-- The first heading's level makes the tabs; a tab whose heading has .active is shown
-- first (else the first tab). defaults.js makes the list work as tabs in the page.
-- Runs before pandoc splits slides, so the tabs' headings never start a slide.

local count = 0

local function tabs_of(div)
  local level = nil
  for _, block in ipairs(div.content) do
    if block.t == "Header" then level = block.level; break end
  end
  if not level then return nil end
  local tabs = {}
  for _, block in ipairs(div.content) do
    if block.t == "Header" and block.level == level then
      table.insert(tabs, { heading = block, content = pandoc.Blocks({}) })
    elseif #tabs > 0 then
      tabs[#tabs].content:insert(block)
    end
  end
  return tabs
end

local function tabset(div)
  if not div.classes:includes("panel-tabset") then return nil end
  local tabs = tabs_of(div)
  if not tabs then return nil end
  count = count + 1
  local id = "tabset-" .. count
  local has_active = false
  for _, tab in ipairs(tabs) do
    has_active = has_active or tab.heading.classes:includes("active")
  end
  local nav = pandoc.Inlines({ pandoc.RawInline("html", '<ul id="' .. id .. '" class="panel-tabset-tabby">') })
  local panes = pandoc.Div({}, div.attr:clone())
  panes.classes = panes.classes:map(function(c) return c == "panel-tabset" and "tab-content" or c end)
  for i, tab in ipairs(tabs) do
    local tab_id = id .. "-" .. i
    local active = has_active and tab.heading.classes:includes("active") or (not has_active and i == 1)
    nav:insert(pandoc.RawInline("html", "<li><a " .. (active and "data-tabby-default " or "")
      .. 'href="#' .. tab_id .. '">'))
    nav:extend(tab.heading.content)
    nav:insert(pandoc.RawInline("html", "</a></li>"))
    local attr = tab.heading.attr:clone()
    attr.identifier = tab_id
    panes.content:insert(pandoc.Div(tab.content, attr))
  end
  nav:insert(pandoc.RawInline("html", "</ul>"))
  return pandoc.Div({ pandoc.Plain(nav), panes }, div.attr:clone())
end

return { { Div = tabset } }
