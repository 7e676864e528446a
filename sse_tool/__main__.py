from sse_tool.entry import main

main()
